"""Models that need no stack: the AWS-scale capacity and cost calculator (`make capacity`) and the
enqueue limiter's accuracy across API instances, simulated in-process (`make rate-limit-accuracy`)."""
