"""tobsched: offline TSSDN scheduler (seed 003) for dpdk-tob."""

__version__ = "0.1.0"
