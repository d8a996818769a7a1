"""Record the suite on each installed backend and regenerate proposal/status.md.

    python conformance_tests/publish_status.py                    # every installed backend, then the page
    python conformance_tests/publish_status.py --backend openvino  # one backend (repeatable), then the page
    python conformance_tests/publish_status.py --render-only       # the page from the committed records

Each run writes conformance_tests/results/<backend>-<version>.json (one record per backend and version: older
versions' records stay, so the page shows every version recorded). Failures and errors are explained by
conformance_tests/results/deviations.json; the page lists what it does not explain.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from onnx_qtypes.conformance import BackendError, load_backend, load_suite, run_suite  # noqa: E402
from onnx_qtypes.conformance.backends import BACKEND_NAMES, backend_version  # noqa: E402
from onnx_qtypes.conformance.status import PAGE, RESULTS, record, record_path, render_page  # noqa: E402
from onnx_qtypes.proto.files import atomic_write  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", action="append", help=f"one of {', '.join(BACKEND_NAMES)} (default: all installed)")
    parser.add_argument("--render-only", action="store_true", help="only regenerate the page from the records")
    parser.add_argument("-j", "--jobs", type=int, default=2)
    args = parser.parse_args(argv)
    if not args.render_only:
        cases = load_suite()  # execution and must-reject cases: a record keeps them apart
        for name in args.backend or BACKEND_NAMES:
            try:
                backend = load_backend(name)
            except BackendError as exc:
                if args.backend:
                    print(f"publish_status: {exc}", file=sys.stderr)
                    return 2
                print(f"skipped {name}: {exc}")
                continue
            results = run_suite(backend, jobs=args.jobs, cases=cases)
            version = backend_version(backend)
            rec = record(results, name, version, cases)
            path = record_path(RESULTS, name, version)
            with atomic_write(path, "w") as fh:
                fh.write(json.dumps(rec, indent=1, sort_keys=True) + "\n")
            print(f"{path.relative_to(ROOT)}: {rec['summary']}, must-reject {rec['reject']['summary']}")
    page = render_page()
    with atomic_write(PAGE, "w") as fh:
        fh.write(page)
    print(f"{PAGE.relative_to(ROOT)} written")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
