package binlog

import (
	"hash/fnv"
	"os"
	"strconv"
)

// A replica registers with a server_id that must be unique among everything connected to the
// node: a second registration with the same id makes the node drop the first (ERROR 4052 on
// MariaDB), and reusing a real replica's id would knock that replica's IO thread off (see the
// facts file, section 5). Real servers use small ids, so derived ids live in their own range,
// far above them.
const (
	serverIDBase = 0x5100_0000 // 1358954496
	serverIDSpan = 0x0100_0000 // 16777216 ids: 0x5100_0000 ... 0x51ff_ffff
)

// derivedServerID is the id a stream registers with when Options.ServerID is 0: a hash of this
// machine's hostname, this process's pid and the node's address, in the derived range. It is
// stable for the life of the process (a reconnect registers as the same replica, so the node
// replaces its stale registration instead of keeping two), different for two sluice processes
// (different pid or host) and never 0. attempt is how many times the node has refused the id
// as a duplicate (4052): each gives another id.
func derivedServerID(hostname string, pid int, address string, attempt uint32) uint32 {
	h := fnv.New32a()
	h.Write([]byte(hostname))
	h.Write([]byte{0})
	h.Write(strconv.AppendInt(nil, int64(pid), 10))
	h.Write([]byte{0})
	h.Write([]byte(address))
	h.Write([]byte{0})
	h.Write(strconv.AppendUint(nil, uint64(attempt), 10))
	return serverIDBase + h.Sum32()%serverIDSpan
}

// serverID is the id to register with: the configured one until the node reports it taken,
// then derived ones.
//
// instance tells apart several sluice instances in one process (sluice sandbox --proxies):
// the same pid, so it goes into the hash with the address.
func serverID(configured uint32, instance, address string, attempt uint32) uint32 {
	if configured != 0 && attempt == 0 {
		return configured
	}
	host, _ := os.Hostname()
	return derivedServerID(host, os.Getpid(), instance+address, attempt)
}
