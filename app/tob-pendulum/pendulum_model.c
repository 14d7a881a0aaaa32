/* The cart-pole plant, its PID and the 19-value state vector (pendulum_model.h has the model). */
#include "pendulum_model.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

_Static_assert(IVP_VAR_COUNT == IVP_STATE_VALUES, "seed 004 §V-A: IvPSim keeps 19 values");

static const char *const kNames[IVP_VAR_COUNT] = {
    [IVP_PE] = "I:PE", [IVP_I] = "I:I",   [IVP_KP] = "I:KP", [IVP_KI] = "I:KI", [IVP_KD] = "I:KD",
    [IVP_M] = "D:M",   [IVP_CM] = "D:CM", [IVP_RL] = "D:RL", [IVP_G] = "D:G",   [IVP_LF] = "D:LF",
    [IVP_AF] = "D:AF", [IVP_CF] = "D:CF", [IVP_PF] = "D:PF", [IVP_AP] = "D:AP", [IVP_AV] = "D:AV",
    [IVP_CP] = "D:CP", [IVP_CV] = "D:CV", [IVP_TS] = "D:TS", [IVP_TT] = "D:TT",
};

void ivp_default_params(struct ivp_params *p) {
  assert(p != NULL);
  *p = (struct ivp_params){
      .pole_mass_kg = 1.0,
      .cart_mass_kg = 10.0,
      .rod_length_m = 1.0,
      .gravity_m_s2 = 9.8,
      .linear_friction = 0.0,
      .angular_friction = 0.0,
      .kp = 400.0,
      .ki = 50.0,
      .kd = 80.0,
      .step_s = 0.05,
      .initial_angle_rad = 0.1,
  };
}

int ivp_params_check(const struct ivp_params *p, char *err, size_t err_len) {
  assert(p != NULL && err != NULL);
  const struct {
    const char *name;
    double value, min, max;
  } bounds[] = {
      {"pole mass (kg)", p->pole_mass_kg, 1e-3, 1e3},
      {"cart mass (kg)", p->cart_mass_kg, 1e-3, 1e4},
      {"rod length (m)", p->rod_length_m, 1e-2, 1e2},
      {"gravity (m/s2)", p->gravity_m_s2, 0.0, 1e3},
      {"linear friction", p->linear_friction, 0.0, 1e4},
      {"angular friction", p->angular_friction, 0.0, 1e4},
      {"kp", p->kp, -1e6, 1e6},
      {"ki", p->ki, -1e6, 1e6},
      {"kd", p->kd, -1e6, 1e6},
      {"step (s)", p->step_s, 1e-4, IVP_STEP_MAX_S},
      {"initial angle (rad)", p->initial_angle_rad, -IVP_FALLEN_RAD, IVP_FALLEN_RAD},
  };
  for (size_t i = 0; i < sizeof bounds / sizeof bounds[0]; i++) {
    if (!isfinite(bounds[i].value) || bounds[i].value < bounds[i].min || bounds[i].value > bounds[i].max) {
      snprintf(err, err_len, "%s = %g is outside [%g, %g]", bounds[i].name, bounds[i].value, bounds[i].min,
               bounds[i].max);
      return -1;
    }
  }
  return 0;
}

void ivp_init(struct ivp_state *s, const struct ivp_params *p) {
  assert(s != NULL && p != NULL);
  memset(s, 0, sizeof *s);
  s->v[IVP_KP] = p->kp;
  s->v[IVP_KI] = p->ki;
  s->v[IVP_KD] = p->kd;
  s->v[IVP_M] = p->pole_mass_kg;
  s->v[IVP_CM] = p->cart_mass_kg;
  s->v[IVP_RL] = p->rod_length_m;
  s->v[IVP_G] = p->gravity_m_s2;
  s->v[IVP_LF] = p->linear_friction;
  s->v[IVP_AF] = p->angular_friction;
  s->v[IVP_AP] = p->initial_angle_rad;
  s->v[IVP_TS] = p->step_s;
  /* The previous error is the current one, so the first derivative is 0 rather than a kick of
   * initial_angle / step. */
  s->v[IVP_PE] = 0.0 - p->initial_angle_rad;
  assert(ivp_state_invalid(s) < 0);
}

double ivp_control(struct ivp_state *s) {
  assert(s != NULL && s->v[IVP_TS] > 0);
  const double dt = s->v[IVP_TS];
  const double error = 0.0 - s->v[IVP_AP]; /* target: upright */
  const double integral = s->v[IVP_I] + error * dt;
  const double derivative = (error - s->v[IVP_PE]) / dt;
  const double force = s->v[IVP_KP] * error + s->v[IVP_KI] * integral + s->v[IVP_KD] * derivative;
  s->v[IVP_PE] = error;
  s->v[IVP_I] = integral;
  s->v[IVP_PF] = s->v[IVP_CF];
  s->v[IVP_CF] = force;
  return force;
}

/* (θ, θ̇, x, ẋ) and their derivatives. */
struct ivp_ode {
  double th, thd, x, xd;
};

static struct ivp_ode ivp_derivative(const struct ivp_state *s, struct ivp_ode y, double force) {
  const double m = s->v[IVP_M], cart = s->v[IVP_CM], l = s->v[IVP_RL], g = s->v[IVP_G];
  const double sin_th = sin(y.th), cos_th = cos(y.th);
  const double a = force - s->v[IVP_LF] * y.xd - m * l * y.thd * y.thd * sin_th;
  const double b = g * sin_th - s->v[IVP_AF] * y.thd / (m * l);
  const double d = cart + m * sin_th * sin_th; /* > 0: masses are positive */
  return (struct ivp_ode){
      .th = y.thd,
      .thd = ((cart + m) * b + cos_th * a) / (l * d),
      .x = y.xd,
      .xd = (a + m * cos_th * b) / d,
  };
}

static struct ivp_ode ivp_axpy(struct ivp_ode y, double h, struct ivp_ode k) {
  return (struct ivp_ode){y.th + h * k.th, y.thd + h * k.thd, y.x + h * k.x, y.xd + h * k.xd};
}

void ivp_advance(struct ivp_state *s) {
  assert(s != NULL && ivp_state_invalid(s) < 0);
  const double step = s->v[IVP_TS];
  const double force = s->v[IVP_CF];
  /* Equal sub-steps of at most IVP_SUBSTEP_MAX_S; their number depends on the step only. */
  const int substeps = (int)ceil(step / IVP_SUBSTEP_MAX_S - 1e-9);
  assert(substeps >= 1 && substeps <= (int)(IVP_STEP_MAX_S / IVP_SUBSTEP_MAX_S) + 1);
  const double h = step / substeps;
  struct ivp_ode y = {s->v[IVP_AP], s->v[IVP_AV], s->v[IVP_CP], s->v[IVP_CV]};
  for (int i = 0; i < substeps; i++) {
    const struct ivp_ode k1 = ivp_derivative(s, y, force);
    const struct ivp_ode k2 = ivp_derivative(s, ivp_axpy(y, h / 2, k1), force);
    const struct ivp_ode k3 = ivp_derivative(s, ivp_axpy(y, h / 2, k2), force);
    const struct ivp_ode k4 = ivp_derivative(s, ivp_axpy(y, h, k3), force);
    y.th += h / 6 * (k1.th + 2 * k2.th + 2 * k3.th + k4.th);
    y.thd += h / 6 * (k1.thd + 2 * k2.thd + 2 * k3.thd + k4.thd);
    y.x += h / 6 * (k1.x + 2 * k2.x + 2 * k3.x + k4.x);
    y.xd += h / 6 * (k1.xd + 2 * k2.xd + 2 * k3.xd + k4.xd);
  }
  s->v[IVP_AP] = y.th;
  s->v[IVP_AV] = y.thd;
  s->v[IVP_CP] = y.x;
  s->v[IVP_CV] = y.xd;
  s->v[IVP_TT] += step;
}

int ivp_state_invalid(const struct ivp_state *s) {
  assert(s != NULL);
  for (int i = 0; i < IVP_VAR_COUNT; i++) {
    if (!isfinite(s->v[i])) return i;
  }
  static const int positive[] = {IVP_M, IVP_CM, IVP_RL, IVP_G, IVP_TS};
  for (size_t i = 0; i < sizeof positive / sizeof positive[0]; i++) {
    if (!(s->v[positive[i]] > 0)) return positive[i];
  }
  if (s->v[IVP_LF] < 0) return IVP_LF;
  if (s->v[IVP_AF] < 0) return IVP_AF;
  if (s->v[IVP_TS] > IVP_STEP_MAX_S) return IVP_TS;
  return -1;
}

bool ivp_fallen(const struct ivp_state *s) {
  assert(s != NULL);
  return !(fabs(s->v[IVP_AP]) <= IVP_FALLEN_RAD);
}

bool ivp_state_equal(const struct ivp_state *a, const struct ivp_state *b) {
  assert(a != NULL && b != NULL);
  return memcmp(a->v, b->v, sizeof a->v) == 0;
}

const char *ivp_var_name(int var) { return var >= 0 && var < IVP_VAR_COUNT ? kNames[var] : NULL; }

int ivp_key(char *out, size_t out_len, const char *prefix, int var) {
  assert(out != NULL && prefix != NULL);
  const char *name = ivp_var_name(var);
  if (name == NULL) return -1;
  const int n = snprintf(out, out_len, "%s%s", prefix, name);
  return n < 0 || (size_t)n >= out_len ? -1 : n;
}

static uint64_t splitmix64(uint64_t *x) {
  uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

void ivp_lie(const struct ivp_state *in, struct ivp_state *out, double bias, double noise, uint64_t *rng) {
  assert(in != NULL && out != NULL && rng != NULL && noise >= 0);
  for (int i = 0; i < IVP_VAR_COUNT; i++) {
    const double u = (double)(splitmix64(rng) >> 11) / 9007199254740992.0; /* [0, 1) */
    out->v[i] = in->v[i] + bias + noise * (2 * u - 1);
  }
}
