"""ASTRA's data side (synthesis): tool documents in, tool chains, tasks, scored trajectories and verified
executable environments. Built: tool documents (`tools`), tool chains (`chains`), tasks (`tasks`), scored trajectories against real or
emulated tools (`emulator`, `trajectories`), and verified executable environments (`qa`, `envgen`)."""
