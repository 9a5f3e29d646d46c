"""ASTRA's data side (synthesis): tool documents in, tool chains, tasks, scored trajectories and verified
executable environments. Built so far: tool documents (`tools`), tool chains (`chains`) and tasks (`tasks`)."""
