"""Tuned launch choices, one YAML file per GPU (written by `cute-dsa tune`).

Shipped inside the wheel as the `cute_dsa.tuning` package data; see cute_dsa/tuning_table.py.
"""
