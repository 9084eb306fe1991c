"""The engines that do a trial's work: fio's jobs, the application workloads and the user's commands."""
