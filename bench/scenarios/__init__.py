"""The benchmark's entry points, one module each (`python -m bench.scenarios.<name>`, most behind a make target):
bench/README.md lists what each measures and where its figures are."""
