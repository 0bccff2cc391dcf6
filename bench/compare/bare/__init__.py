"""The bare pipeline: corral's shape cut to its minimum (API Lambda → SQS → worker Lambda → DynamoDB)."""
