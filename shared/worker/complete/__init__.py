"""Completing a delivery: the completer applies its verdict (every store write a delivery makes), and the backstop
records dead what SQS moved after the receive budget."""
