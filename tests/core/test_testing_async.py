"""The kit's pytest plugin runs plain ``async def`` tests with asyncio, and
leaves alone the ones another runner (anyio, pytest-asyncio, pytest-trio)
owns or that the project asked pytest to keep (``seamkit_async = false``)."""

from __future__ import annotations

import textwrap

import pytest

pytest_plugins = ["pytester"]

NOT_SUPPORTED = "*async def functions are not natively supported*"


def write_tests(pytester: pytest.Pytester, source: str) -> None:
    pytester.makepyfile(test_async=textwrap.dedent(source))


def test_a_plain_async_test_runs_its_body(pytester: pytest.Pytester) -> None:
    write_tests(
        pytester,
        """
        import asyncio

        async def test_passes():
            await asyncio.sleep(0)
            assert asyncio.get_running_loop().is_running()

        async def test_fails():
            await asyncio.sleep(0)
            assert 1 + 1 == 3, "the body ran"
        """,
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*the body ran*"])
    result.stdout.no_fnmatch_line(NOT_SUPPORTED)


def test_each_async_test_gets_a_fresh_loop_closed_after_it(pytester: pytest.Pytester) -> None:
    write_tests(
        pytester,
        """
        import asyncio

        loops = []

        async def test_first():
            loops.append(asyncio.get_running_loop())

        async def test_second():
            loops.append(asyncio.get_running_loop())
            assert loops[0] is not loops[1]
            assert loops[0].is_closed()
        """,
    )
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=2)


def test_an_async_test_gets_only_the_arguments_it_declares(pytester: pytest.Pytester) -> None:
    write_tests(
        pytester,
        """
        import pytest

        @pytest.fixture(autouse=True)
        def unasked():
            return "set up, not passed"

        @pytest.fixture
        def answer():
            return 42

        async def test_fixtures(answer, tmp_path):
            assert answer == 42 and tmp_path.is_dir()

        class TestInAClass:
            async def test_method(self, answer):
                assert answer == 42
        """,
    )
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=2)


ANYIO_DEBUG_CONFTEST = """
import pytest

@pytest.fixture
def anyio_backend():
    # Only anyio's runner passes these options: the kit's asyncio.run does not.
    return ("asyncio", {"debug": True})
"""


def test_an_anyio_test_is_left_to_anyio(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(ANYIO_DEBUG_CONFTEST)
    write_tests(
        pytester,
        """
        import asyncio
        import pytest
        import sniffio

        @pytest.mark.anyio
        async def test_marked():
            assert sniffio.current_async_library() == "asyncio"
            assert asyncio.get_running_loop().get_debug(), "not run by anyio"

        async def test_with_the_fixture(anyio_backend):
            assert asyncio.get_running_loop().get_debug(), "not run by anyio"
        """,
    )
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=2)


def test_anyio_parametrizes_a_marked_test_by_backend(pytester: pytest.Pytester) -> None:
    write_tests(
        pytester,
        """
        import pytest

        @pytest.mark.anyio
        async def test_marked(anyio_backend_name):
            assert anyio_backend_name == "asyncio"
        """,
    )
    result = pytester.runpytest("-p", "no:cacheprovider", "-v")
    result.stdout.fnmatch_lines(["*test_marked?asyncio? PASSED*"])


def test_anyio_tests_stay_anyios_with_its_plugin_off(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(
        """
        import pytest

        @pytest.fixture
        def anyio_backend():
            return "asyncio"
        """
    )
    write_tests(
        pytester,
        """
        import pytest

        @pytest.mark.anyio
        async def test_marked():
            pass

        async def test_with_the_fixture(anyio_backend):
            pass

        async def test_plain():
            pass
        """,
    )
    result = pytester.runpytest("-p", "no:cacheprovider", "-p", "no:anyio")
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines(
        [
            "FAILED test_async.py::test_marked - Failed: async def functions*",
            "FAILED test_async.py::test_with_the_fixture - Failed: async def functions*",
        ]
    )


@pytest.mark.parametrize("runner", ["asyncio", "trio"])
def test_a_runner_whose_mode_is_unknown_keeps_every_async_test(
    pytester: pytest.Pytester, runner: str
) -> None:
    pytester.makeconftest(
        f"""
        def pytest_configure(config):
            # A plugin registered under pytest-asyncio's / pytest-trio's name
            # that declares no mode: the kit assumes it owns every async test.
            config.pluginmanager.register(object(), {runner!r})
        """
    )
    write_tests(
        pytester,
        """
        async def test_plain():
            pass
        """,
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([NOT_SUPPORTED])


# Stand-ins for pytest-asyncio and pytest-trio: registered under their names,
# declaring their mode settings as they do (neither is installed here).
_RUNNER = """
import pytest

class Runner:
    pass

def pytest_addoption(parser):
    parser.addini("asyncio_mode", "", default="strict")
    parser.addini("trio_mode", "", type="bool", default=False)

def pytest_configure(config):
    config.pluginmanager.register(Runner(), {name!r})
    config.addinivalue_line("markers", "asyncio: pytest-asyncio")
    config.addinivalue_line("markers", "trio: pytest-trio")
"""


@pytest.mark.parametrize(
    ("runner", "ini"),
    [("asyncio", "asyncio_mode = auto"), ("trio", "trio_mode = true")],
)
def test_a_runner_in_auto_mode_keeps_every_async_test(
    pytester: pytest.Pytester, runner: str, ini: str
) -> None:
    pytester.makeconftest(_RUNNER.format(name=runner))
    pytester.makeini(f"[pytest]\n{ini}\n")
    write_tests(pytester, "async def test_plain():\n    pass\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([NOT_SUPPORTED])


@pytest.mark.parametrize("runner", ["asyncio", "trio"])
def test_in_strict_mode_the_kit_runs_the_unmarked_tests(
    pytester: pytest.Pytester, runner: str
) -> None:
    # pytest-asyncio's strict mode (its default) and pytest-trio's default take
    # only the tests marked for them; nobody else would run the plain ones.
    pytester.makeconftest(_RUNNER.format(name=runner))
    write_tests(
        pytester,
        f"""
        import asyncio
        import pytest

        async def test_plain():
            await asyncio.sleep(0)

        async def test_plain_fails():
            await asyncio.sleep(0)
            assert False, "the body ran"

        @pytest.mark.{runner}
        async def test_marked():
            pass
        """,
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    # test_marked is its runner's: the stand-in runs nothing, so pytest fails it.
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines(["*AssertionError: the body ran*"])
    result.stdout.fnmatch_lines(["FAILED test_async.py::test_marked - Failed: async def*"])


def test_a_returned_value_is_warned_about_as_for_a_plain_test(pytester: pytest.Pytester) -> None:
    write_tests(pytester, "async def test_returns():\n    return 5\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, warnings=1)
    result.stdout.fnmatch_lines(["*PytestReturnNotNoneWarning*"])


def test_an_asyncio_marked_test_is_left_to_pytest_asyncio(pytester: pytest.Pytester) -> None:
    # Declared here as pytest-asyncio would, which is not installed.
    pytester.makeini("[pytest]\nmarkers =\n    asyncio: run with pytest-asyncio\n")
    write_tests(
        pytester,
        """
        import pytest

        @pytest.mark.asyncio
        async def test_marked():
            pass

        async def test_plain():
            pass
        """,
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["FAILED test_async.py::test_marked*"])


def test_the_ini_option_turns_the_runner_off(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nseamkit_async = false\n")
    write_tests(
        pytester,
        """
        async def test_plain():
            pass

        def test_sync():
            pass
        """,
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([NOT_SUPPORTED])


def test_the_ini_option_is_declared_and_on_by_default(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("-p", "no:cacheprovider", "--help")
    result.stdout.fnmatch_lines(["*seamkit_async (bool)*"])
    pytester.makeini("[pytest]\nseamkit_async = true\n")
    write_tests(pytester, "async def test_plain():\n    pass\n")
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)
