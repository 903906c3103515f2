"""Readers for the binary formats we inspect: ELF (elf.py), PE (pe.py), and a per-file cache."""
