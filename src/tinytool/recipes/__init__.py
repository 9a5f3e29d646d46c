"""Recipes: a paper's method as a list of tinytool stages (data → teacher → rollouts → cache → distill → RL →
eval → report), run with ``tinytool run RECIPE.yaml``; each stage in its own folder, unchanged stages skipped,
a killed run resumed."""
