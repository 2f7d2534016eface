"""benchmarks/common.py's options shared by the learning benchmarks: --quick shrinks the run to its smoke-test
budget and the first seed, and the output folder follows the benchmark's name."""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / 'benchmarks'))
from common import BENCH_DIR, benchmark_args, benchmark_parser  # noqa: E402


def test_defaults_are_the_full_run_in_the_benchmarks_own_folder():
    args = benchmark_args(benchmark_parser('Doc line.', 60_000, 11_000), [], 'nstep_sac_hopper')
    assert (args.steps, args.seeds, args.report_only) == (60_000, [0, 1, 2], False)
    assert args.out == BENCH_DIR / 'results' / 'nstep_sac_hopper'


def test_quick_takes_the_smoke_budget_and_the_first_seed_into_a_folder_of_its_own():
    args = benchmark_args(benchmark_parser('Doc line.', 60_000, 11_000), ['--quick', '--seeds', '4', '5'], 'x')
    assert (args.steps, args.seeds, args.out.name) == (11_000, [4], 'x_quick')


def test_optional_options_appear_only_where_asked(tmp_path):
    plain = benchmark_parser('Doc line.', 100, None)
    with pytest.raises(SystemExit):
        plain.parse_args(['--quick'])
    args = benchmark_args(benchmark_parser('Doc line.', 100, 10, threads=True, sets=True, pin=True),
                          ['--threads', '2', '--set', 'a=1', '--set', 'b=2', '--no-pin', '--out', str(tmp_path)], 'y')
    assert (args.threads, args.extra_sets, args.no_pin, args.out) == (2, ['a=1', 'b=2'], True, tmp_path)


def test_the_output_folder_name_may_follow_an_option():
    parser = benchmark_parser('Doc line.', 100, 10)
    parser.add_argument('--alf', action='store_true')
    name = lambda args: 'halfcheetah_alf' if args.alf else 'halfcheetah'  # noqa: E731
    assert benchmark_args(parser, ['--alf', '--quick'], name).out.name == 'halfcheetah_alf_quick'
    assert benchmark_args(parser, [], name).out.name == 'halfcheetah'
