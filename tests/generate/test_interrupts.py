"""Ctrl-C held back while an answer is handed over and saved (apibank.generate.interrupts)."""

from __future__ import annotations

import _thread
import signal

import pytest

from apibank.generate.interrupts import HeldInterrupt


def test_a_ctrl_c_inside_is_held_until_asked_and_raised_on_leaving():
    steps = []
    with pytest.raises(KeyboardInterrupt):
        with HeldInterrupt() as held:
            _thread.interrupt_main()
            steps.append("after the interrupt")  # still running: the interrupt is only noted
            assert held.pending
            steps.append("saved")
    assert steps == ["after the interrupt", "saved"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # the handler is given back


def test_raise_if_pending_raises_where_the_holder_chooses():
    with HeldInterrupt() as held:
        held.raise_if_pending()  # nothing pending: nothing happens
        _thread.interrupt_main()
        with pytest.raises(KeyboardInterrupt):
            held.raise_if_pending()
        assert not held.pending
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_an_inner_hold_leaves_the_decision_to_the_outer_one():
    with HeldInterrupt() as outer:
        with HeldInterrupt():
            _thread.interrupt_main()
        assert outer.pending  # the inner block ended without raising; the outer one decides
        with pytest.raises(KeyboardInterrupt):
            outer.raise_if_pending()


def test_sigterm_is_held_like_ctrl_c_and_raised_as_terminated():
    from apibank.generate.interrupts import Terminated, exit_status, sigterm_as_interrupt

    with sigterm_as_interrupt():
        with pytest.raises(Terminated) as raised:
            with HeldInterrupt() as held:
                signal.raise_signal(signal.SIGTERM)
                assert held.pending  # noted, the line still written whole
        assert exit_status(raised.value) == 143 and isinstance(raised.value, KeyboardInterrupt)
        with pytest.raises(Terminated):  # outside a hold it raises at once
            signal.raise_signal(signal.SIGTERM)
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    assert exit_status(KeyboardInterrupt()) == 130
