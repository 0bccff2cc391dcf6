"""The jobs table: the one package that reads and writes its items."""
