"""A pool's process is CPU-bound when it has all the CPU it can get: about a core, or a
good part of one while its stepping threads wait for a CPU for the rest (a full machine);
not when it mostly waits on I/O, however long its threads then wait to run
(``workers.ordering.saturation``, docs/reading.md "How many stepping threads")."""

from __future__ import annotations

from lockstep.workers.ordering.saturation import CPU_WINDOW_S, Saturation, cpu_bound

WINDOW = 0.05


def test_a_process_using_a_core_in_its_steps_is_cpu_bound() -> None:
    assert cpu_bound(WINDOW, used=0.9 * WINDOW, steps_used=0.8 * WINDOW, waited=0.0)


def test_a_process_using_part_of_a_core_while_its_steps_wait_for_a_cpu_is_cpu_bound() -> None:
    assert cpu_bound(WINDOW, used=0.6 * WINDOW, steps_used=0.5 * WINDOW, waited=0.3 * WINDOW)


def test_a_process_using_part_of_a_core_on_an_idle_machine_is_not() -> None:
    assert not cpu_bound(WINDOW, used=0.6 * WINDOW, steps_used=0.5 * WINDOW, waited=0.0)


def test_steps_that_wait_on_io_on_a_full_machine_are_not_cpu_bound() -> None:
    assert not cpu_bound(WINDOW, used=0.1 * WINDOW, steps_used=0.1 * WINDOW, waited=3 * WINDOW)


def test_a_process_busy_outside_its_steps_is_not() -> None:
    assert not cpu_bound(WINDOW, used=0.95 * WINDOW, steps_used=0.05 * WINDOW, waited=0.0)


def test_its_steps_cpu_unknown_the_process_use_decides() -> None:
    assert cpu_bound(WINDOW, used=0.9 * WINDOW, steps_used=None, waited=0.0)


def test_the_first_window_only_starts_the_measure_and_the_next_gives_a_verdict() -> None:
    saturation = Saturation()
    saturation.add_current_thread()
    try:
        assert saturation.measure(100.0)
        assert saturation.saturated is None
        assert not saturation.measure(100.0 + CPU_WINDOW_S / 2)
        assert saturation.measure(100.0 + 2 * CPU_WINDOW_S)
        assert saturation.saturated in (True, False)
    finally:
        saturation.close()
