/* The inverted pendulum of tob-pendulum (seed 004 §V-A): a cart-pole plant, its PID controller
 * and the 19-value state vector that replicas agree on through the key-value store. Pure C, no
 * I/O, no DPDK: the same inputs give the same bits on every replica (no randomness, fixed
 * integration steps), which is what lets correct replicas publish identical copies.
 *
 * Model (θ = 0 upright, θ > 0 when the pole leans towards -x; F > 0 pushes the cart towards +x):
 *   a point mass m at distance l from the pivot on a cart of mass M, cart friction b (N s/m),
 *   pivot friction c (N m s/rad), gravity g. With
 *     A = F - b ẋ - m l θ̇² sin θ
 *     B = g sin θ - c θ̇ / (m l)
 *     D = M + m sin² θ
 *   the Lagrangian equations
 *     (M + m) ẍ - m l cos θ θ̈ = A
 *     -cos θ ẍ + l θ̈          = B
 *   give ẍ = (A + m cos θ B) / D and θ̈ = ((M + m) B + cos θ A) / (l D).
 *   Integration: classic Runge-Kutta 4 with the force held constant over the control period
 *   (zero-order hold), in equal sub-steps of at most 1 ms.
 *
 * Controller (the seed's Algorithm 1 with the error and integral as replicated state):
 *   e = 0 - θ, I += e T, d = (e - e_prev) / T, F = kp e + ki I + kd d.
 *
 * State vector: the 19 values the seed's IvPSim reads and writes every period, named as in the
 * In-ConcReTeS implementation of that experiment ("I:" controller, "D:" dynamics). Parameters
 * (masses, gains, the step) are part of it on purpose: they are replicated like the rest, so a
 * lying replica cannot change them either.
 */
#ifndef TOB_PENDULUM_MODEL_H
#define TOB_PENDULUM_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum ivp_var {
  IVP_PE = 0, /* I:PE  previous error of the PID (rad) */
  IVP_I,      /* I:I   integral of the error (rad s) */
  IVP_KP,     /* I:KP  proportional gain (N/rad) */
  IVP_KI,     /* I:KI  integral gain (N/(rad s)) */
  IVP_KD,     /* I:KD  derivative gain (N s/rad) */
  IVP_M,      /* D:M   pole mass (kg) */
  IVP_CM,     /* D:CM  cart mass (kg) */
  IVP_RL,     /* D:RL  rod length, pivot to the pole's mass (m) */
  IVP_G,      /* D:G   gravity (m/s²) */
  IVP_LF,     /* D:LF  linear friction of the cart (N s/m) */
  IVP_AF,     /* D:AF  angular friction at the pivot (N m s/rad) */
  IVP_CF,     /* D:CF  current force, applied during the coming step (N) */
  IVP_PF,     /* D:PF  previous force (N) */
  IVP_AP,     /* D:AP  angular position θ (rad) */
  IVP_AV,     /* D:AV  angular velocity (rad/s) */
  IVP_CP,     /* D:CP  cart position (m) */
  IVP_CV,     /* D:CV  cart velocity (m/s) */
  IVP_TS,     /* D:TS  time step: simulated seconds per control period */
  IVP_TT,     /* D:TT  total simulated time (s) */
  IVP_VAR_COUNT
};

/* The seed's "19 floating point values in every iteration". */
#define IVP_STATE_VALUES 19
/* Sub-step bound of the integrator and the largest step a state may carry. */
#define IVP_SUBSTEP_MAX_S 0.001
#define IVP_STEP_MAX_S 1.0
/* |θ| beyond this counts as fallen: the pole is below horizontal. */
#define IVP_FALLEN_RAD 1.5707963267948966

struct ivp_state {
  double v[IVP_VAR_COUNT];
};

struct ivp_params {
  double pole_mass_kg;
  double cart_mass_kg;
  double rod_length_m;
  double gravity_m_s2;
  double linear_friction;  /* N s/m */
  double angular_friction; /* N m s/rad */
  double kp, ki, kd;
  double step_s;            /* simulated time per control period */
  double initial_angle_rad;
};

/* Parameters that keep the pole up from 0.2 rad for control periods of 10 to 100 ms (the unit
 * test checks it): the seed implementation's plant (m 1 kg, M 10 kg, l 1 m, g 9.8) without
 * friction, and gains tuned for a 50 ms step with margin to 100 ms. */
void ivp_default_params(struct ivp_params *p);
/* 0 when usable; otherwise -1 and a message naming the parameter and its bound. */
int ivp_params_check(const struct ivp_params *p, char *err, size_t err_len);

/* Period 0: the plant at rest at the initial angle, the PID without history. */
void ivp_init(struct ivp_state *s, const struct ivp_params *p);
/* The PID on s's angle: updates I:PE, I:I, D:PF and D:CF; returns the force (N). */
double ivp_control(struct ivp_state *s);
/* Advances the plant by D:TS under the force D:CF; D:TT grows by D:TS. */
void ivp_advance(struct ivp_state *s);

/* -1 when s can drive the plant (every value finite; masses, length, gravity and step positive,
 * frictions non-negative, step at most IVP_STEP_MAX_S); otherwise the index of the first value
 * that cannot. An agreed state from a read is checked before use: f + 1 colluding liars could
 * otherwise hand the integrator a zero mass. */
int ivp_state_invalid(const struct ivp_state *s);
bool ivp_fallen(const struct ivp_state *s);
bool ivp_state_equal(const struct ivp_state *a, const struct ivp_state *b); /* bitwise */

/* "I:PE" ... "D:TT"; NULL outside the enum. */
const char *ivp_var_name(int var);
/* prefix + name into out (NUL-terminated); its length, or -1 when it does not fit. */
int ivp_key(char *out, size_t out_len, const char *prefix, int var);

/* A lying replica's copy: every value plus `bias` plus uniform noise in [-noise, +noise] drawn
 * from *rng (splitmix64), so lies are reproducible from a seed. */
void ivp_lie(const struct ivp_state *in, struct ivp_state *out, double bias, double noise,
             uint64_t *rng);

#ifdef __cplusplus
}
#endif

#endif /* TOB_PENDULUM_MODEL_H */
