# Sourced by scripts/fetch-lab-kernel.sh and scripts/fetch-zfs.sh, which fetch into a cache
# what the kernel lab needs beside the host's packages: Debian's apt for the download of
# one suite's packages only, through a sources list, lists and archives of
# its own under WORK, so that the host's sources, package lists and installed packages
# stay untouched.
#   notice TEXT      what the user must read even when scripts/quietly.sh sends the rest to
#                    its log: on fd 3 where it is open
#   need_root WHAT   exits 0 (saying WHAT will skip) where not root
#   work_in CACHE    sets `work` to a new directory in CACHE (a dot: not taken for a
#                    finished entry while it fills), removed when the script exits
#   own_apt WORK "deb MIRROR SUITE COMPONENT..."   sets the array `opts` for apt-get and
#   apt-cache, and reads the suite's package lists
own_apt() {
    local work=$1 source=$2
    mkdir -p "$work/lists/partial" "$work/archives/partial"
    echo "$source" >"$work/sources.list"
    # Debian's archive keyring (the host's, which holds every current suite's key) checks the
    # suite's Release file as for any apt source; each package's checksum is checked against
    # it on download.
    opts=(-o "Dir::Etc::SourceList=$work/sources.list" -o Dir::Etc::SourceParts=/dev/null
          -o "Dir::State::Lists=$work/lists" -o "Dir::Cache=$work" -o "Dir::Cache::Archives=$work/archives"
          -o APT::Architecture=amd64 -o APT::Architectures::=amd64
          -o APT::Sandbox::User=root)  # its own directory is root's: apt's _apt user cannot write there
    echo "own-apt: the package lists of ${source#deb }, into $work (the host's stay as they are)"
    apt-get -q "${opts[@]}" update
}

notice() { if { true >&3; } 2>/dev/null; then echo "$*" >&3; else echo "$*" >&2; fi; }

need_root() {
    if [ "$(id -u)" -ne 0 ]; then
        notice "$1"
        exit 0
    fi
}

work_in() {
    mkdir -p "$1"
    work=$(mktemp -d "$1/.fetch-XXXXXX")
    trap 'rm -rf "$work"' EXIT
}
