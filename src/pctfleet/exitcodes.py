"""Exit codes, shared by every command (ansible-playbook's, so scripts carry over)."""

OK = 0
ERROR = 1  # a command-specific failure (verify failed, audit error)
FAILED = 2  # a task or command failed in at least one container
UNREACHABLE = 3  # at least one node could not be reached
PARSE_ERROR = 4  # inventory, playbook, template or vars could not be read
BAD_OPTIONS = 5  # the command line itself is wrong
INTERRUPTED = 99  # Ctrl-C or SIGTERM: new work stopped, the journal was written
