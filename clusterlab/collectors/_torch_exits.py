"""How launchers and shells report a worker that died, with its exit code or signal (read by `torch_dist`).

Split from `torch_dist` (one collector, several modules): the wordings of a worker's death that carry its exit code or
signal, the literals without which none can match, and the code each signal word stands for.
"""

from __future__ import annotations

import signal

# Other launchers' word for a worker that died, with its exit code or signal: the DeepSpeed launcher's
# sigkill_handler (`[ERROR] [launch.py:321:sigkill_handler] [cmd] exits with return code = -9`),
# torch.multiprocessing.spawn's ProcessExitedException (`process 0 terminated with signal SIGKILL` / `with exit code
# 1`) and torch.distributed.launch's CalledProcessError (`Command '[...]' died with <Signals.SIGKILL: 9>.` /
# `returned non-zero exit status 1.`)
# NOTE: the shell's own report of its child killed by a signal (bash's bare `Killed` or `Segmentation fault (core
# dumped)` after the program's last output, a batch script's `script: line 28: 19344 Killed  python3 train.py`, job
# control's `[1]+  Killed  cmd`, zsh's `zsh: bus error  cmd`) and Python's faulthandler (`Fatal Python error:
# Segmentation fault`) are the same exit, its code minus the signal's (`exit_modes` gives it a mode where nothing else
# does: SIGKILL the OOM killer, SIGBUS /dev/shm, SIGSEGV the code)
SIG_WORDS = {"Killed": -9, "killed": -9, "Segmentation fault": -11, "segmentation fault": -11, "Bus error": -7,
             "bus error": -7, "Aborted": -6, "abort": -6, "Floating point exception": -8,
             "floating point exception": -8, "Illegal instruction": -4, "illegal hardware instruction": -4}
_SIG_BASH = r"(Killed|Segmentation fault|Bus error|Aborted|Floating point exception|Illegal instruction)"
_SIG_ZSH = r"(killed|segmentation fault|bus error|abort|floating point exception|illegal hardware instruction)"
SHELL_KILLED = (rf"^{_SIG_BASH}(?: \(core dumped\))?\s*$|: line \d+: +\d+ {_SIG_BASH}(?: +\(core dumped\))?\s+\S"
                rf"|^\[\d+\][+-]? +{_SIG_BASH}(?: \(core dumped\))?\s+\S|^zsh: {_SIG_ZSH}(?: \(core dumped\))?\s+\S"
                rf"|^Fatal Python error: {_SIG_BASH}\s*$")
# where the signal's word sits in each of those shapes
SIG_AT = (r"(?:^|: line \d+: +\d+ |^\[\d+\][+-]? +|^zsh: |^Fatal Python error: )"
          + _SIG_BASH[:-1] + "|" + _SIG_ZSH[1:])
# NOTE: ... and torchrun's summary cell `Signal 9 (SIGKILL) received by PID N` outside its field layout (a table
# flattened by a paste: `rank1 (local rank: 1)exitcode: -9 (pid: N)error file: <N/A>`)
# (the cell begins its line: a launcher's own report that quotes it, `message='Signal 9 ...'`, is that launcher's)
SUMMARY_SIGNAL = r"^\s*(?:traceback\s*:\s*)?[Ss]ignal \d+ \(SIG\w+\) received by PID \d+"
# ... and MPICH / Intel MPI's Hydra (mpirun, mpiexec) after its `BAD TERMINATION OF ONE OF YOUR APPLICATION
# PROCESSES` banner: `YOUR APPLICATION TERMINATED WITH THE EXIT STRING: Bus error (signal 7)` (strsignal's words)
HYDRA_SIGNAL = r"APPLICATION TERMINATED WITH THE EXIT STRING: [^(\n]*\(signal \d+\)"
# the signal's number in torch.distributed.launch's CalledProcessError, that cell or Hydra's line: minus the exit code
SIGNAL_NUMBER = (r"(?:died with <Signals\.SIG\w+: |^\s*(?:traceback\s*:\s*)?[Ss]ignal "
                 r"|EXIT STRING: [^(\n]*\(signal )(\d+)(?:>| \(SIG\w+\) received by PID|\))")
LAUNCHER_EXIT = (r"\] exits with return code = -?\d+|process \d+ terminated with (?:signal SIG\w+|exit code \d+)"
                 r"|' died with <Signals\.SIG\w+: \d+>|' returned non-zero exit status \d+|" + SUMMARY_SIGNAL
                 + "|" + HYDRA_SIGNAL + "|" + SHELL_KILLED)
SIGNAL_EXITS = {s.name: -s.value for s in signal.Signals}  # a signal's death as the negative exit code torch reports
SIG_LITS = ("Killed", "killed ", "egmentation fault", "us error", "Aborted", "abort", "loating point exception",
            "llegal instruction", "llegal hardware instruction")
EXIT_LITS = (*SIG_LITS, " exits with return code = ", " terminated with signal ",
             " terminated with exit code ", "' died with <Signals.", "' returned non-zero exit status ",
             ") received by PID ", "WITH THE EXIT STRING: ")
