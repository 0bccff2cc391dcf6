"""Cancel and retry a job (one, or a tenant's dead jobs in bulk), and the operator's DLQ redrive of one."""
