"""ASTRA's data side (synthesis): tool documents in, tool chains, tasks, scored trajectories and verified
executable environments. Built so far: tool documents (`tools`), tool chains (`chains`), tasks (`tasks`), and scored trajectories
against real or emulated tools (`emulator`, `trajectories`)."""
