"""The corral CDK app: one module per deployed component."""
