"""Launch mechanics: start the workload, compose its loader environment, prove bindings, place DLLs.

Kept light on purpose (``zluda-run`` imports it on every launch): import the
submodule you need (``launch.process``, ``launch.linux``, ``launch.verify``,
``launch.windows``); nothing heavy is imported here.
"""
