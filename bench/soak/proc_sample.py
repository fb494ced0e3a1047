"""One process's resources, read from /proc from outside the process.

The soak watches peers without changing them: nothing here costs the data
plane anything. libfabric's resources show from outside as what they are
made of: the tcp provider's sockets, the eventfds and epoll sets its progress
engine waits on (anonymous inodes), and shared memory (the shm provider's
/dev/shm regions and any fi_* mapping). A leaked endpoint, completion queue
or connection therefore shows as a growing count of one of these kinds.
"""
import os

# The series one sample holds, in CSV column order, with their units.
SERIES = {
    "rss_mib": "resident set (VmRSS), MiB",
    "hwm_mib": "peak resident set (VmHWM), MiB",
    "fds": "open file descriptors",
    "threads": "threads",
    "sockets": "socket descriptors",
    "anon_inodes": "eventfd/epoll/timerfd descriptors",
    "maps": "memory mappings",
    "shm_maps": "/dev/shm and fi_* mappings",
}


def status_fields(text):
    """{field: first number} of /proc/PID/status lines such as 'VmRSS: 123 kB'."""
    fields = {}
    for line in text.splitlines():
        name, _, rest = line.partition(":")
        words = rest.split()
        if words and words[0].isdigit():
            fields[name] = int(words[0])
    return fields


def fd_kind(target):
    """The kind of one /proc/PID/fd link target."""
    if target.startswith("socket:"):
        return "socket"
    if target.startswith("anon_inode:"):
        return "anon_inode"
    if target.startswith("pipe:"):
        return "pipe"
    return "file"


def is_shared_memory(map_line):
    """Whether a /proc/PID/maps line maps shared memory libfabric could own."""
    fields = map_line.split(None, 5)
    path = fields[5].strip() if len(fields) == 6 else ""
    return path.startswith("/dev/shm/") or "fi_" in os.path.basename(path)


def sample(pid, proc="/proc"):
    """The SERIES of process `pid`, or None when it has exited (any of its
    /proc files vanishing mid-read counts as exited)."""
    base = os.path.join(proc, str(pid))
    try:
        with open(os.path.join(base, "status")) as f:
            status = status_fields(f.read())
        kinds = {"socket": 0, "anon_inode": 0, "pipe": 0, "file": 0}
        for fd in os.listdir(os.path.join(base, "fd")):
            try:
                kinds[fd_kind(os.readlink(os.path.join(base, "fd", fd)))] += 1
            except FileNotFoundError:
                pass  # closed between listdir and readlink: not open now
        with open(os.path.join(base, "maps")) as f:
            maps = f.read().splitlines()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return {
        "rss_mib": status.get("VmRSS", 0) / 1024,
        "hwm_mib": status.get("VmHWM", 0) / 1024,
        "fds": sum(kinds.values()),
        "threads": status.get("Threads", 0),
        "sockets": kinds["socket"],
        "anon_inodes": kinds["anon_inode"],
        "maps": len(maps),
        "shm_maps": sum(1 for m in maps if is_shared_memory(m)),
    }


def environ(pid, proc="/proc"):
    """{name: value} of a process's initial environment, or {} if unreadable."""
    try:
        with open(os.path.join(proc, str(pid), "environ"), "rb") as f:
            raw = f.read()
    except (FileNotFoundError, PermissionError, ProcessLookupError):
        return {}
    pairs = (item.decode(errors="replace").partition("=") for item in raw.split(b"\0") if item)
    return {k: v for k, _, v in pairs}


def children(pid, proc="/proc"):
    """The pids whose parent is `pid`."""
    out = []
    for entry in os.listdir(proc):
        if not entry.isdigit():
            continue
        try:
            with open(os.path.join(proc, entry, "stat")) as f:
                stat = f.read()
        except (FileNotFoundError, ProcessLookupError):
            continue
        # The command name, in parentheses, may hold spaces: fields follow its last ')'.
        if int(stat[stat.rindex(")") + 2:].split()[1]) == pid:
            out.append(int(entry))
    return out


def peers_of(launcher_pid, proc="/proc"):
    """{rank: pid} of the descendants of murmur-run that carry MURMUR_RANK."""
    found, frontier = {}, [launcher_pid]
    while frontier:
        for child in children(frontier.pop(), proc):
            rank = environ(child, proc).get("MURMUR_RANK")
            if rank is not None and rank.isdigit():
                found[int(rank)] = child  # its own children inherit MURMUR_RANK: not peers
            else:
                frontier.append(child)
    return found
