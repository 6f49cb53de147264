package app

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/sluicedb/sluice/internal/admin"
	"github.com/sluicedb/sluice/internal/config"
	"github.com/sluicedb/sluice/internal/topology"
)

// Nodes added and removed while sluice runs: POST and DELETE /v1/nodes, and a reload whose
// backends list gained or lost one. The file's text is edited and validated whole, as for an
// endpoint's change; then the topology takes the node (the monitor, the binlog streams and the
// endpoints' weights follow it) and the file is written back.

// nodeKeys are what POST /v1/nodes takes besides the name.
var nodeKeys = []string{"address", "proxy_protocol", "read_weights", "role", "zone"}

// CreateNode implements admin.Control: a new replica, validated as in the file. It takes no
// reads until the monitor has seen it answering (and measured its lag); read_weights gives
// its weight per endpoint (an endpoint left out gives it what its read_weights say of a node
// it does not list: the default 100 without read_weights, else 0).
func (a *App) CreateNode(body map[string]json.RawMessage) (ch admin.Change, err error) {
	a.changeMu.Lock()
	defer a.changeMu.Unlock()
	defer func() { a.counted("create_node", err) }()
	name, err := newName(body, "node")
	if err != nil {
		return admin.Change{}, err
	}
	if a.nodeIndex(name) >= 0 {
		return admin.Change{}, admin.Errorf(admin.Conflict, "name", "a node is named %q already", name)
	}
	if _, ok := body["address"]; !ok {
		return admin.Change{}, admin.Errorf(admin.Invalid, "address", "required: the new node's host:port")
	}
	set := map[string]any{"role": config.RoleReplica}
	var weights map[string]int
	for k, raw := range body {
		switch {
		case k == "name":
		case k == "read_weights":
			if err := json.Unmarshal(raw, &weights); err != nil {
				return admin.Change{}, admin.Errorf(admin.Invalid, k, "want an object of endpoint names and weights: %v", err)
			}
		case slices.Contains(nodeKeys, k):
			v, err := patchValue(k, raw)
			if err != nil {
				return admin.Change{}, err
			}
			if k == "role" && v != config.RoleReplica {
				return admin.Change{}, admin.Errorf(admin.Invalid, k, "only replicas can be added (the primary changes by switchover)")
			}
			set[k] = v
		default:
			return admin.Change{}, admin.Errorf(admin.Invalid, k, "unknown setting; a node takes name, %s", strings.Join(nodeKeys, ", "))
		}
	}
	data, err := config.AddBackend(a.cfg.Path, a.raw, name, set)
	for _, ep := range slices.Sorted(maps.Keys(weights)) {
		if err != nil {
			break
		}
		e := a.cfg.Endpoint(ep)
		if e == nil {
			return admin.Change{}, admin.Errorf(admin.Invalid, "read_weights."+ep, "no endpoint is named %q", ep)
		}
		// The endpoint's weights in force (defaults filled in), with the new node's: the file
		// then says what the endpoint does.
		w := maps.Clone(e.ReadWeights)
		w[name] = weights[ep]
		data, err = config.EditEndpoint(a.cfg.Path, data, ep, map[string]any{"read_weights": w})
	}
	data, next, err := a.edited(data, err)
	if err != nil {
		return admin.Change{}, err
	}
	b := next.Backend(name)
	if b == nil { // the file's text names it so; after ${...} expansion it would not be
		return admin.Change{}, admin.Errorf(admin.Invalid, "name", "not a name a backend can have: %q", name)
	}
	if other := a.nodeAt(b.Address); other != "" {
		return admin.Change{}, admin.Errorf(admin.Conflict, "address", "node %s is at %s already", other, b.Address)
	}
	if err := a.unchangedOnDisk(); err != nil {
		return admin.Change{}, err
	}
	if a.cluster != nil {
		// A node removed under this name left its drain record (kept until now, so that no
		// sluice undrained it on its way out): the new node starts in service everywhere.
		if err := a.cluster.st.DeleteDrain(context.Background(), name); err != nil {
			return admin.Change{}, admin.Errorf(admin.Unavailable, "", "%v: nothing was changed", err)
		}
	}
	if err := a.share(data); err != nil {
		return admin.Change{}, err
	}
	n, err := nodeOf(*b, topology.Replica)
	if err != nil { // validated with the file: not expected
		return admin.Change{}, admin.Errorf(admin.Invalid, "proxy_protocol", "%v", err)
	}
	slot, err := a.topo.AddNode(n)
	if err != nil {
		return admin.Change{}, admin.Errorf(admin.Conflict, "", "%v", err)
	}
	if a.positions != nil {
		a.positions.Own(slot, a.topo.Snapshot().Nodes[slot])
	}
	ch = admin.Change{Changed: []string{"backends." + name + " (new)"}}
	for _, e := range next.Endpoints {
		if err := a.applyEndpoint(next, e.Name); err != nil {
			// Validated whole above, so not expected; the node is in, the endpoint keeps its
			// weights without it.
			a.log.Error("a new node's weights were not applied", "endpoint", e.Name, "err", err)
			ch.Restart = append(ch.Restart, "endpoints."+e.Name+".read_weights (not applied: "+err.Error()+")")
			continue
		}
		ch.Changed = append(ch.Changed, fmt.Sprintf("endpoints.%s.read_weights.%s: %d", e.Name, name, e.ReadWeights[name]))
	}
	ch.Persisted, ch.PersistError = a.persist(data)
	a.setConfig(next, data)
	// Every endpoint's weight for the new node: what the node's arrival changed.
	var w []any
	for _, e := range next.Endpoints {
		w = append(w, slog.Int(e.Name, e.ReadWeights[name]))
	}
	a.log.Info("node added from the admin API", "node", name, "address", b.Address, "zone", b.Zone, "slot", slot,
		"persisted", ch.Persisted, slog.Group("read_weights", w...))
	added := a.nodesOf(0)[slot]
	ch.Node = &added
	return ch, nil
}

// DeleteNode implements admin.Control: a drained node leaves the topology (the monitor and its
// binlog stream stop) and the file.
func (a *App) DeleteNode(name string) (ch admin.Change, err error) {
	a.changeMu.Lock()
	defer a.changeMu.Unlock()
	defer func() { a.counted("delete_node", err) }()
	i := a.nodeIndex(name)
	if i < 0 {
		return admin.Change{}, admin.Errorf(admin.NotFound, "", "no node is named %q", name)
	}
	if err := a.removable(i); err != nil {
		return admin.Change{}, err
	}
	data, next, err := a.edited(config.RemoveBackend(a.cfg.Path, a.raw, name))
	if err != nil {
		return admin.Change{}, err
	}
	if err := a.unchangedOnDisk(); err != nil {
		return admin.Change{}, err
	}
	if a.cluster != nil {
		if held := a.othersHold(name); held != nil {
			return admin.Change{}, admin.Errorf(admin.Conflict, "", "%s is still draining on other sluice nodes, which hold connections to it: %s (as they last reported, each second); nothing was changed",
				name, strings.Join(held, ", "))
		}
	}
	if err := a.share(data); err != nil {
		return admin.Change{}, err
	}
	address := a.topo.Snapshot().Nodes[i].Address
	if err := a.removeNode(i, next); err != nil {
		return admin.Change{}, err
	}
	ch = admin.Change{Changed: []string{"backends." + name + " (removed)"}}
	ch.Persisted, ch.PersistError = a.persist(data)
	a.setConfig(next, data)
	a.log.Info("node removed from the admin API", "node", name, "address", address, "persisted", ch.Persisted)
	return ch, nil
}

// forceDrained drains node i at once: its connections closed, waiting (up to 2 s) until the
// sessions let go of them.
func (a *App) forceDrained(i int) {
	if !a.topo.Snapshot().IsDraining(i) {
		_ = a.topo.SetDraining(i, true)
	}
	deadline := time.Now().Add(2 * time.Second)
	for a.topo.Snapshot().Load[i].Conns.Load() > 0 && time.Now().Before(deadline) {
		a.proxy.CloseNodeConns(i)
		time.Sleep(20 * time.Millisecond)
	}
}

// nodeAt names the node in the topology at address, or is "".
func (a *App) nodeAt(address string) string {
	snap := a.topo.Snapshot()
	for i, n := range snap.Nodes {
		if n.Address == address && !snap.IsRemoved(i) {
			return n.Name
		}
	}
	return ""
}

// removable says why node i cannot leave now (nil: it can): only a drained node can.
func (a *App) removable(i int) error {
	snap := a.topo.Snapshot()
	n := snap.Nodes[i].Name
	switch {
	case snap.IsPrimary(i):
		return admin.Errorf(admin.Conflict, "", "%s is the primary: switch over to another node first", n)
	case !snap.IsDraining(i):
		return admin.Errorf(admin.Conflict, "", "%s is in service: drain it first (POST /v1/nodes/%s/drain)", n, n)
	case snap.Load[i].Conns.Load() > 0:
		return admin.Errorf(admin.Conflict, "", "%s is still draining: sluice holds %d connections to it", n, snap.Load[i].Conns.Load())
	}
	return nil
}

// removeNode takes node i out of the topology, and the endpoints' weights (next, the
// configuration without it) with it. Under changeMu.
func (a *App) removeNode(i int, next *config.Config) error {
	if err := a.topo.RemoveNode(i); err != nil {
		return admin.Errorf(admin.Conflict, "", "%v", err)
	}
	if t := a.drainTimers[i]; t != nil {
		t.Stop()
		delete(a.drainTimers, i)
	}
	if a.positions != nil {
		a.positions.Own(i, nil)
	}
	for _, e := range next.Endpoints {
		if !a.proxy.HasEndpoint(e.Name) {
			continue // an endpoint the same reload starts
		}
		if err := a.applyEndpoint(next, e.Name); err != nil {
			a.log.Error("the endpoint's weights without a removed node were not applied", "endpoint", e.Name, "err", err)
		}
	}
	return nil
}

// reloadNodes applies a reload's change of the backends list (next's) to the topology: new
// replicas are added, drained nodes no longer listed are removed. What it cannot apply (a node
// still in service, a changed address, a new primary) it refuses before changing anything (an
// error), or lists for a restart. It reports whether the nodes changed.
//
// follow: the change was stored by another sluice node, which checked that the node leaving
// was drained everywhere; one this sluice still holds connections to is closed now (a
// connection opened just before the drain reached it), so that the nodes do not part ways.
func (a *App) reloadNodes(next *config.Config, ch *admin.Change, follow bool) (bool, error) {
	snap := a.topo.Snapshot()
	var add []config.Backend
	var remove []int
	listed := map[string]bool{}
	for _, b := range next.Backends {
		listed[b.Name] = true
	}
	leaving := map[string]bool{} // addresses of the nodes the file no longer lists
	for i, n := range snap.Nodes {
		if snap.IsRemoved(i) || listed[n.Name] {
			continue
		}
		if err := a.removable(i); err != nil {
			if !follow || snap.IsPrimary(i) {
				return false, admin.Errorf(admin.Conflict, "backends",
					"the file no longer lists backend %s: %v; nothing was changed", n.Name, err)
			}
			a.log.Warn("the stored configuration removes a node this sluice still used; its connections are closed", "node", n.Name, "why", err)
		}
		remove = append(remove, i)
		leaving[n.Address] = true
	}
	adding := map[string]string{} // address -> the new backend there
	for _, b := range next.Backends {
		i := a.nodeIndex(b.Name)
		if i < 0 {
			other := a.nodeAt(b.Address)
			if leaving[b.Address] {
				other = ""
			}
			if other == "" {
				other = adding[b.Address]
			}
			switch {
			case b.Role != config.RoleReplica:
				ch.Restart = append(ch.Restart, "backends."+b.Name+" (a new primary)")
			case other != "":
				return false, admin.Errorf(admin.Conflict, "backends",
					"new backend %s is at %s, where %s is already; nothing was changed", b.Name, b.Address, other)
			default:
				add = append(add, b)
				adding[b.Address] = b.Name
			}
			continue
		}
		n := snap.Nodes[i]
		if n.Address != b.Address || n.Zone != b.Zone {
			ch.Restart = append(ch.Restart, "backends."+b.Name+".address/zone")
		}
		if n.ProxyProtocol.String() != b.ProxyProtocol {
			// The node's connections in pools and sessions were opened with the header they
			// have; a node changes its header with sluice's restart.
			ch.Restart = append(ch.Restart, "backends."+b.Name+".proxy_protocol")
		}
		// The role the node has now (the primary follows switchovers), not the one it started
		// with: a file brought in line with a switchover needs no restart.
		role := topology.Replica
		if snap.IsPrimary(i) {
			role = topology.Primary
		}
		if role.String() != b.Role {
			ch.Restart = append(ch.Restart, "backends."+b.Name+".role")
		}
	}
	for _, i := range remove {
		name, address := snap.Nodes[i].Name, snap.Nodes[i].Address
		if follow {
			a.forceDrained(i)
		}
		if err := a.removeNode(i, next); err != nil {
			ch.Restart = append(ch.Restart, "backends."+name+" (not removed: "+err.Error()+")")
			continue
		}
		ch.Changed = append(ch.Changed, "backends."+name+" (removed)")
		a.log.Info("reload: node removed", "node", name, "address", address)
	}
	for _, b := range add {
		n, err := nodeOf(b, topology.Replica)
		slot := -1
		if err == nil {
			slot, err = a.topo.AddNode(n)
		}
		if err != nil {
			ch.Restart = append(ch.Restart, "backends."+b.Name+" (not added: "+err.Error()+")")
			continue
		}
		if a.positions != nil {
			a.positions.Own(slot, a.topo.Snapshot().Nodes[slot])
		}
		ch.Changed = append(ch.Changed, "backends."+b.Name+" (new)")
		a.log.Info("reload: node added", "node", b.Name, "address", b.Address, "zone", b.Zone, "slot", slot)
	}
	return len(add) > 0 || len(remove) > 0, nil
}
