"""``privrank audit``: audit a registered private algorithm on its worst-case neighbours.

Exit codes: 0 when no violation is detected, 1 when the lower bound on the exhibited privacy
loss exceeds the claimed epsilon, 2 on a usage error. The last line printed is
``epsilon_lower_bound=<x>``.
"""
from __future__ import annotations

import argparse

from ..errors import InputError
from .arguments import add_quiet_option, examples, seed, summary

#: the claimed delta of an approximate-DP mechanism when --delta is not given (privrank.audit.DEFAULT_DELTA)
DEFAULT_DELTA = 1e-6


def register(sub) -> None:
    p = sub.add_parser(
        "audit", help=summary("audit"),
        description="Run a registered mechanism on its worst-case neighbouring inputs and report "
                    "a lower bound on the privacy loss it exhibits. Exit 0: no violation, "
                    "1: violation, 2: usage error.",
        epilog=examples("privrank audit --list", "privrank audit randomized-response --epsilon 1 --seed 1"))
    p.add_argument("name", nargs="?", help="mechanism name (see --list)")
    p.add_argument_group("mechanism").add_argument("--list", action="store_true",
                                                   help="list the registered mechanisms")
    claim = p.add_argument_group("claimed guarantee")
    claim.add_argument("--epsilon", type=float, help="claimed epsilon")
    claim.add_argument("--delta", type=float,
                       help=f"claimed delta (approximate-DP mechanisms: default {DEFAULT_DELTA:g})")
    audit = p.add_argument_group("audit run")
    group = audit.add_mutually_exclusive_group()
    group.add_argument("--noise-scale-factor", type=float, default=1.0, metavar="F",
                       help="draw F times the noise the mechanism claims, while it claims epsilon "
                            "(0.5: half the noise)")
    group.add_argument("--control", nargs="?", const=True, default=None, metavar="NAME",
                       help="run the mechanism's declared negative control (or the named one); "
                            "a sound audit must then exit 1")
    audit.add_argument("--trials", type=int, help="runs per input (default: the mechanism's)")
    audit.add_argument("--seed", type=seed, help="seed for a reproducible audit")
    add_quiet_option(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..audit import mechanisms, run_audit

    if args.list:
        if args.name:
            raise InputError("--list takes no mechanism name")
        for name, mech in mechanisms().items():
            print(f"{name}\t{mech.description}")
        return 0
    if not args.name:
        raise InputError("name a mechanism to audit (or use --list)")
    if args.epsilon is None:
        raise InputError("--epsilon is required: the claimed guarantee to audit")
    result = run_audit(args.name, epsilon=args.epsilon, delta=args.delta,
                       factor=args.noise_scale_factor, control=args.control,
                       trials=args.trials, seed=args.seed)
    print("\n".join(result.report()))
    return 1 if result.violation else 0
