"""``kopt validate``: specs validated (no data read, unless --data prints the memory plan), or the schema."""
from __future__ import annotations

import json
import sys

from ..errors import KoptError
from .common import check_extras, cwd_paths, scheduler_overrides


def cmd_validate(args):
    from ..spec import load_spec, resolved_yaml

    if args.schema:
        from ..contract.registry import registry
        from ..spec.schema import compose

        if args.markdown:
            from ..spec.reference import render_markdown

            sys.stdout.write(render_markdown(registry()))
        else:
            print(json.dumps(compose(registry()), indent=2))
        return 0
    if not args.spec:
        raise KoptError("validate needs a SPEC (or --schema)")
    from ..spec.packaged import resolve_spec_arg

    failed = 0

    def attempt(work):
        """``work()``, or None after reporting its error (one SPEC: raised; several: each reported, the worst
        exit status kept)."""
        nonlocal failed
        try:
            return work()
        except KoptError as exc:
            if len(args.spec) == 1:
                raise
            print(f"kopt: error: {exc}", file=sys.stderr)
            failed = max(failed, exc.exit_status)
            return None

    def loaded(arg):
        spec = load_spec(resolve_spec_arg(arg), cwd_paths(args.overrides) + scheduler_overrides(args.scheduler))
        check_extras(spec)
        return spec

    for arg in args.spec:
        spec = attempt(lambda: loaded(arg))
        if spec is None:
            continue
        if args.resolved:
            sys.stdout.write(resolved_yaml(spec))
        else:
            data = spec["data"].get("source") or "files"
            print(f"{arg}: valid ({spec['solver']['name']} on {spec['model']['loss']['name']} / "
                  f"{spec['model']['kernel']['name']}, form {spec['model']['form']}, data {data})")
        if args.data and attempt(lambda: _print_memory_plan(spec)) is False:
            failed = max(failed, 2)
    return failed


def _print_memory_plan(spec) -> bool:
    """``kopt validate --data``: read and prepare the spec's data, print its solver's memory plan (:mod:`kopt.numerics.memory`)
    against the memory available; False where it does not fit (its refusal is printed as kopt solve would)."""
    from ..contract.registry import registry
    from ..numerics import memory
    from ..running.assemble import assemble

    with memory.out_of_memory(f"reading and preparing the data of {spec.get('name') or 'the spec'}"):
        problem = assemble(spec)
    solver = registry().get("solver", spec["solver"]["name"])(
        **{k: v for k, v in spec["solver"].items() if k != "name"})
    sizes = solver.memory_sizes(problem)
    have = memory.available_bytes()
    if solver.plans and solver.memory_key in memory.KEYS:  # a planning solver caps its own search to what fits
        field = memory.KEYS[solver.memory_key]
        most = memory.largest_fitting(solver, sizes, have, field)
        if 0 < most < getattr(sizes, field):
            print(f"solver {solver.name} tries at most {most:,} (the most its plan fits in the memory available)")
            sizes = sizes.replace(**{field: most})
    print("\n".join(memory.plan_lines(solver, sizes, have)))
    plan = memory.plan_of(solver, sizes)
    if plan and memory.total(plan) > have:
        print(f"kopt: error: {memory.refusal(solver, sizes, plan, have)}", file=sys.stderr)
        return False
    return True

