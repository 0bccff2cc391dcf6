"""The `corral` command line: jobs and schedules over the API, operator tasks over AWS (`corral --help`)."""
