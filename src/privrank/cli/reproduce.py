"""``privrank reproduce STUDY``: re-run a paper's experiments and check its claims."""
from __future__ import annotations

import shlex
import sys
from pathlib import Path

from ..errors import InputError
from .arguments import add_quiet_option, examples, seed, summary


def register(sub) -> None:
    p = sub.add_parser(
        "reproduce", help=summary("reproduce"),
        description="Run every experiment of a study (a module of privrank.experiments, e.g. xu) over its "
                    "grid of settings and replications, in parallel and resumably, and write results.csv, "
                    "one PNG per figure, claims.csv and summary.md to OUT. Exit code 1 when a required "
                    "claim does not hold.",
        epilog=examples("privrank reproduce xu --quick", "privrank reproduce xu --jobs 4 --out results/xu-full",
                        "privrank reproduce cai --quick --fresh"))
    p.add_argument("study", metavar="STUDY", help="the study to run, e.g. xu")
    run = p.add_argument_group("run")
    run.add_argument("--quick", action="store_true", help="smaller grid, still enough replications for every claim")
    run.add_argument("--reps", type=int, metavar="R", help="replications per cell (default: the study's)")
    run.add_argument("--seed", type=seed, default=0, metavar="S", help="seed of the whole run (default 0)")
    run.add_argument("--jobs", type=int, default=2, metavar="J", help="worker processes (default 2)")
    output = p.add_argument_group("output")
    output.add_argument("--out", metavar="DIR", help="output directory (default results/STUDY)")
    output.add_argument("--fresh", action="store_true", help="recompute the cells already stored in DIR")
    add_quiet_option(p)
    p.set_defaults(func=run_reproduce)


def run_reproduce(args) -> int:
    from ..experiments.runner import load_study, run

    study = load_study(args.study, quick=args.quick, reps=args.reps)
    out = Path(args.out or Path("results") / study.name)
    if out.exists() and not out.is_dir():
        raise InputError(f"--out {out} exists and is not a directory: give a directory (new or from an earlier run)")
    command = "privrank reproduce " + " ".join(shlex.quote(a) for a in [
        args.study, *(["--quick"] if args.quick else []), *(["--reps", str(args.reps)] if args.reps else []),
        "--seed", str(args.seed)])
    report = run(study, out, seed=args.seed, jobs=args.jobs, fresh=args.fresh, command=command)
    claims, obs = report["claims"], report["observations"]
    tested = [c for c in claims if c["holds"] != "skipped"]
    failed = [c for c in tested if c["holds"] is not True]
    drawn = sum(v is True for v in report["figures"].values())
    print(f"{study.title}: {report['computed']} cells computed, {report['resumed']} resumed, "
          f"{report['seconds']:.0f} s")
    print(f"  claims: {len(tested) - len(failed)} of {len(tested)} hold -> {out / 'claims.csv'}")
    for c in failed:
        print(f"    does not hold: {c['id']}: {c['observed']}")
    if obs:
        agree = sum(o["holds"] is True for o in obs)
        print(f"  observations: the paper's statement agrees with the data in {agree} of {len(obs)} "
              f"-> {out / 'observations.csv'}")
    print(f"  figures: {drawn} of {len(report['figures'])} drawn")
    for fig, status in report["figures"].items():
        if status is not True:
            print(f"    {fig} not drawn: {status}")
    for name, reason in report["skipped"].items():
        print(f"  skipped {name}: {reason}")
    print(f"  summary: {out / 'summary.md'}; all results: {out / 'results.csv'}")
    sys.stdout.flush()
    return 1 if failed else 0
