"""SIGTERM always stops a serving process (headrace.stop_signals).

A broker once ignored SIGTERM for 60 s in a full run: its handler called
Event.set() while the main thread, returning from Event.wait(0.2), held the
Event's lock. The child here waits with Event.wait(0), so its main thread
holds that lock most of the time; with a handler that calls set(), more than
half of these children hang (24 of 40 when measured). Every one must stop.
"""
import signal
import subprocess
import sys
import textwrap
import time

CHILD = textwrap.dedent("""
    from headrace.stop_signals import stop_event_on_signals
    stop = stop_event_on_signals()
    print("ready", flush=True)
    while not stop.wait(0):
        pass
    print("stopped", flush=True)
""")


def _serve_and_signal(sig: int) -> tuple[int | None, str]:
    p = subprocess.Popen([sys.executable, "-c", CHILD], stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "ready"
        time.sleep(0.02)
        p.send_signal(sig)
        try:
            code = p.wait(5)
        except subprocess.TimeoutExpired:
            return None, ""
        return code, p.stdout.read()
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


def test_sigterm_and_sigint_stop_a_busy_waiting_main_thread_every_time():
    outcomes = [_serve_and_signal(sig) for sig in [signal.SIGTERM] * 20 + [signal.SIGINT] * 5]
    hung = sum(1 for code, _ in outcomes if code is None)
    assert hung == 0, f"{hung} of {len(outcomes)} children ignored the signal for 5 s"
    assert all(code == 0 and out.strip() == "stopped" for code, out in outcomes), outcomes
