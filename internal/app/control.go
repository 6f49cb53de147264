package app

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/sluicedb/sluice/internal/admin"
	"github.com/sluicedb/sluice/internal/config"
	"github.com/sluicedb/sluice/internal/proxy"
	"github.com/sluicedb/sluice/internal/route"
	"github.com/sluicedb/sluice/internal/topology"
)

// The app is the admin API's Control: it describes the parts it built and changes them,
// validating every change as the configuration file is validated and writing it back there.

// patchable are the endpoint settings PATCH /v1/endpoints/{name} changes while sluice runs.
var patchable = []string{"allow", "balance", "connections_from", "consistency", "consistency_timeout", "max_connections",
	"max_replica_lag", "mode", "multi_statements", "nearest_zone", "read_weights", "transaction_split", "pool_mode",
	"pool.max_per_node", "pool.idle_timeout", "pool.max_lifetime", "pool.acquire_timeout", "pool.min_idle"}

// Proxy implements admin.Control.
func (a *App) Proxy() admin.Proxy {
	cfg := a.config()
	return admin.Proxy{Version: a.version, Started: a.started, UptimeSeconds: time.Since(a.started).Seconds(),
		Zone: cfg.Zone, ConfigFile: cfg.Path, Sessions: a.proxy.Sessions(), Nodes: a.Nodes(), Endpoints: a.endpointsOf(cfg),
		Store: a.storeState()}
}

// Nodes implements admin.Control.
func (a *App) Nodes() []admin.Node {
	slots := a.nodesOf(0)
	out := make([]admin.Node, 0, len(slots))
	for _, n := range slots {
		if n.State != "removed" {
			out = append(out, n)
		}
	}
	return out
}

// nodesOf describes the nodes, one per topology slot (a free slot's with state removed). A
// replica's state is lagging past maxLag (0: never): whether it takes reads depends on each
// endpoint's own max_replica_lag, which the endpoints' Reads say, so the API passes 0.
func (a *App) nodesOf(maxLag time.Duration) []admin.Node {
	snap := a.topo.Snapshot()
	var out []admin.Node
	for i, n := range snap.Nodes {
		role := topology.Replica
		if snap.IsPrimary(i) {
			role = topology.Primary
		}
		an := admin.Node{Name: n.Name, Address: n.Address, Role: role.String(), Zone: n.Zone, State: snap.StateName(i, maxLag),
			Connections: snap.Load[i].Conns.Load(), Active: snap.Load[i].Active.Load()}
		if a.positions != nil {
			an.PositionSource = "poll"
			if a.positions.Streaming(i) {
				an.PositionSource = "stream"
			}
		}
		if st := snap.State[i]; st != nil {
			if lag, ok := route.Lag(st); ok && !snap.IsPrimary(i) {
				sec := lag.Seconds()
				an.LagSeconds = &sec
			}
			if st.LagKnown {
				ms := st.Lag.Milliseconds()
				an.LagMs = &ms
			}
			if st.Replica != nil {
				an.SecondsBehind = st.Replica.SecondsBehind
			}
			if st.Version != "" {
				tc := st.ThreadsConnected
				an.GTIDPosition, an.Threads, an.Version = st.Applied, &tc, st.Version
				an.RTTMs = float64(st.RTT.Microseconds()) / 1000
				an.ReadOnly, an.ServerID = st.ReadOnly, st.ServerID
			}
			an.Error = topology.Problem(st)
		}
		out = append(out, an)
	}
	return out
}

// Endpoints implements admin.Control.
func (a *App) Endpoints() []admin.Endpoint { return a.endpointsOf(a.config()) }

// endpointsOf describes the endpoints of cfg, the configuration in force.
func (a *App) endpointsOf(cfg *config.Config) []admin.Endpoint {
	snap := a.topo.Snapshot()
	var out []admin.Endpoint
	for _, e := range cfg.Endpoints {
		st := a.proxy.EndpointStats(e.Name)
		ae := admin.Endpoint{Name: e.Name, Listen: e.Listen, Address: a.Addr(e.Name), Sessions: st.Sessions,
			Statements: st.Statements, StatementsByNode: map[string]uint64{},
			Settings: admin.EndpointSettings{Mode: e.Mode, ReadWeights: e.ReadWeights, Balance: e.Balance,
				ConnectionsFrom: e.ConnectionsFrom, NearestZone: e.NearestZone, MaxReplicaLag: e.MaxReplicaLag.String(),
				Consistency: e.Consistency, ConsistencyTimeout: e.ConsistencyTimeout.String(),
				TransactionSplit: e.TransactionSplit, MaxConnections: e.MaxConnections,
				MultiStatements: e.MultiStatements, TLS: e.TLS, Allow: e.Allow, PoolMode: e.PoolMode,
				Pool: admin.PoolSettings{MaxPerNode: e.Pool.MaxPerNode, IdleTimeout: e.Pool.IdleTimeout.String(),
					MaxLifetime: e.Pool.MaxLifetime.String(), AcquireTimeout: e.Pool.AcquireTimeout.String(), MinIdle: e.Pool.MinIdle}}}
		for i, n := range st.ByNode {
			if i < len(snap.Nodes) && (n > 0 || !snap.IsRemoved(i)) {
				ae.StatementsByNode[snap.Nodes[i].Name] += n
			}
		}
		if rs, ok := a.proxy.EndpointSettings(e.Name); ok {
			ae.Reads = readsOf(&rs.Routing, snap)
		}
		out = append(out, ae)
	}
	return out
}

// readsOf says, for every node of snap, whether it takes the new reads of the endpoint routed
// by rs now, and why not (route's rules and words).
func readsOf(rs *route.Settings, snap *topology.Snapshot) []admin.NodeReads {
	out := []admin.NodeReads{}
	for i, n := range snap.Nodes {
		if !snap.IsRemoved(i) {
			why := route.WhyNoReads(rs, snap, i)
			out = append(out, admin.NodeReads{Node: n.Name, Reads: why == "", Why: why})
		}
	}
	return out
}

// Sessions implements admin.Control.
func (a *App) Sessions() []admin.Session {
	now := time.Now()
	var out []admin.Session
	for _, s := range a.proxy.SessionList() {
		as := admin.Session{ID: uint64(s.ID), User: s.User, Client: s.Client, Endpoint: s.Endpoint, Nodes: s.Nodes,
			InTransaction: s.InTx, Pins: s.Pins, AgeSeconds: now.Sub(s.Started).Seconds()}
		if as.Nodes == nil {
			as.Nodes = []string{}
		}
		if as.Pins == nil {
			as.Pins = []string{}
		}
		if !s.Statement.IsZero() {
			d := now.Sub(s.Statement).Seconds()
			as.StatementSeconds = &d
		}
		out = append(out, as)
	}
	if out == nil {
		out = []admin.Session{}
	}
	return out
}

// KillSession implements admin.Control.
func (a *App) KillSession(id uint64) bool {
	ok := id <= 1<<32-1 && a.proxy.KillSession(uint32(id))
	a.changeMu.Lock()
	defer a.changeMu.Unlock()
	var err error
	if !ok {
		err = errors.New("no such session")
	}
	a.counted("kill_session", err)
	return ok
}

// Readiness implements admin.Control: every endpoint listens, no shutdown has begun and the
// primary is up; degraded when the monitor cannot log in to some nodes (routing goes on on
// what was last seen of them, and nothing new is learnt: a switchover, lag, a node that went
// away).
func (a *App) Readiness() error {
	select {
	case <-a.ready:
	default:
		return errors.New("the endpoints are not listening yet")
	}
	if a.stopping.Load() {
		return errors.New("shutting down: new connections are refused while the running sessions finish")
	}
	snap := a.topo.Snapshot()
	if snap.Primary < 0 || !snap.Up[snap.Primary] {
		return errors.New("the primary is down")
	}
	var denied []string
	msg := ""
	for i, n := range snap.Nodes {
		if st := snap.State[i]; st != nil && st.AuthFailed != "" && !snap.IsRemoved(i) {
			denied = append(denied, n.Name)
			msg = st.AuthFailed
		}
	}
	if denied != nil {
		return &admin.Degraded{Reason: fmt.Sprintf("the monitor cannot log in to %s (%s): check monitor.user and monitor.password; "+
			"routing goes on on the roles last known, without new lag, positions or switchovers", strings.Join(denied, ", "), msg)}
	}
	return nil
}

// config is the configuration in force.
func (a *App) config() *config.Config {
	if c := a.live.Load(); c != nil {
		return c
	}
	a.changeMu.Lock()
	defer a.changeMu.Unlock()
	return a.cfg
}

// setConfig puts next (its text data) in force as a.cfg and a.raw (under changeMu), and for
// config's readers, who wait for no change in flight (one that waits on the store, up to its
// dial timeout, or on a removed node's connections).
func (a *App) setConfig(next *config.Config, data []byte) {
	a.cfg, a.raw = next, data
	a.live.Store(next)
}

// PatchEndpoint implements admin.Control: the file's text, as last applied, is edited (a map
// merged into the file's as a JSON merge patch, config.MergePatch), parsed and validated whole; the endpoint's settings take effect as one change (proxy.UpdateEndpoint:
// a statement sees the old routing settings or the new, never a mix); then the file is written
// back.
func (a *App) PatchEndpoint(name string, patch map[string]json.RawMessage) (ch admin.Change, err error) {
	a.changeMu.Lock()
	defer a.changeMu.Unlock()
	defer func() { a.counted("patch_endpoint", err) }()
	if !a.proxy.HasEndpoint(name) {
		return admin.Change{}, admin.Errorf(admin.NotFound, "", "no endpoint is named %q", name)
	}
	set := map[string]any{}
	for k, raw := range patch {
		if !slices.Contains(patchable, k) {
			msg := "unknown setting"
			if k == "name" || k == "listen" || k == "tls" {
				msg = "cannot change while the endpoint listens (create a new endpoint, or change the file and restart)"
			}
			return admin.Change{}, admin.Errorf(admin.Invalid, k, "%s; these can: %s", msg, strings.Join(patchable, ", "))
		}
		v, err := patchValue(k, raw)
		if err != nil {
			return admin.Change{}, err
		}
		if sub, ok := strings.CutPrefix(k, "pool."); ok {
			// The endpoint's pool section merges key by key: those given change, a null
			// removes one (the top-level pool's then applies), the others stay.
			mp, _ := set["pool"].(config.MergePatch)
			if mp.Patch == nil {
				mp.Patch = map[string]any{}
			}
			mp.Patch[sub] = v
			set["pool"] = mp
			continue
		}
		if m, ok := v.(map[string]any); ok {
			// A map merges (RFC 7386): the entries given change, a null removes one, the
			// others stay. Where the file gives none, they merge into those in force.
			v = config.MergePatch{Patch: m, Base: settingInForce(a.cfg.Endpoint(name), k)}
		}
		set[k] = v // nil (JSON null): back to the default
	}
	data, next, err := a.edited(config.EditEndpoint(a.cfg.Path, a.raw, name, set))
	if err != nil {
		return admin.Change{}, err
	}
	if _, _, err := a.endpointIn(next, name); err != nil {
		return admin.Change{}, admin.Errorf(admin.Invalid, "", "%v", err)
	}
	if err := a.share(data); err != nil {
		return admin.Change{}, err
	}
	if err := a.applyEndpoint(next, name); err != nil {
		return admin.Change{}, admin.Errorf(admin.Invalid, "", "%v", err)
	}
	// Changed names what is now different, not every key given: a PATCH that sets a value
	// already in force changes nothing, and says so.
	changes := endpointChanges(a.cfg.Endpoint(name), next.Endpoint(name))
	ch = admin.Change{Changed: []string{}}
	for _, c := range changes {
		ch.Changed = append(ch.Changed, c.(slog.Attr).Key)
	}
	slices.Sort(ch.Changed)
	ch.Persisted, ch.PersistError = a.persist(data)
	a.setConfig(next, data)
	a.log.Info("endpoint changed from the admin API", "endpoint", name, "persisted", ch.Persisted, slog.Group("changed", changes...))
	for _, e := range a.endpointsOf(next) {
		if e.Name == name {
			ch.Endpoint = &e
		}
	}
	return ch, nil
}

// settingInForce is endpoint e's map setting k as in force (defaults filled in), as JSON
// values; nil for a setting that is not a map.
func settingInForce(e *config.Endpoint, k string) map[string]any {
	if e == nil || k != "read_weights" {
		return nil
	}
	out := make(map[string]any, len(e.ReadWeights))
	for n, w := range e.ReadWeights {
		out[n] = w
	}
	return out
}

// patchValue decodes setting k's JSON value. A string may not hold "$": the file expands
// ${NAME} from the environment, and a value from the API must never read the process's
// environment (nor learn which variables exist from the error).
func patchValue(k string, raw json.RawMessage) (any, error) {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, admin.Errorf(admin.Invalid, k, "not a JSON value: %v", err)
	}
	var hasDollar func(any) bool
	hasDollar = func(v any) bool {
		switch v := v.(type) {
		case string:
			return strings.Contains(v, "$")
		case []any:
			return slices.ContainsFunc(v, hasDollar)
		case map[string]any:
			for key, x := range v {
				if strings.Contains(key, "$") || hasDollar(x) {
					return true
				}
			}
		}
		return false
	}
	if hasDollar(v) {
		return nil, admin.Errorf(admin.Invalid, k, "a value from the API may not contain \"$\" (environment references belong in the file)")
	}
	return v, nil
}

// newName is the name of the thing (endpoint, node) a POST creates: required, a string, and
// like every value from the API without "$" (patchValue).
func newName(body map[string]json.RawMessage, thing string) (string, error) {
	raw, ok := body["name"]
	if !ok {
		return "", admin.Errorf(admin.Invalid, "name", "required: the new %s's name", thing)
	}
	v, err := patchValue("name", raw)
	if err != nil {
		return "", err
	}
	name, ok := v.(string)
	if !ok || name == "" {
		return "", admin.Errorf(admin.Invalid, "name", "required: the new %s's name (a string)", thing)
	}
	if err := config.CheckName(name); err != nil {
		return "", admin.Errorf(admin.Invalid, "name", "%v", err)
	}
	return name, nil
}

// unchangedOnDisk refuses a change when the configuration file changed on disk since sluice
// last read or wrote it: a change of the nodes that the file would not keep would be undone,
// surprisingly, by the reload the operator needs to make next.
func (a *App) unchangedOnDisk() error {
	if a.cfg.Path == "" || a.cluster != nil {
		return nil
	}
	onDisk, err := os.ReadFile(a.cfg.Path)
	if err != nil {
		return admin.Errorf(admin.Unreadable, "", "reading %s: %v", a.cfg.Path, err)
	}
	if !bytes.Equal(onDisk, a.disk) {
		return admin.Errorf(admin.Conflict, "", "%s changed on disk since sluice read it: reload it (POST /v1/reload) first; nothing was changed", a.cfg.Path)
	}
	return nil
}

// edited takes the file's text as a change edited it (or the edit's error) and parses it: the
// API's errors for a text the edit could not make (409) or that does not validate (400).
func (a *App) edited(data []byte, err error) ([]byte, *config.Config, error) {
	if err != nil {
		return nil, nil, admin.Errorf(admin.Conflict, "", "the configuration file cannot take the change: %v", err)
	}
	next, err := a.parse(data)
	if err != nil {
		return nil, nil, invalid(err)
	}
	return data, next, nil
}

// parse parses a new text of the configuration file as the one in force was: its path, and
// the zone it runs in (serve's --zone and SLUICE_ZONE override the file's).
func (a *App) parse(data []byte) (*config.Config, error) {
	var next *config.Config
	var err error
	if c := a.cluster; c != nil {
		next, err = config.ParseShared(c.bootPath, c.boot, c.shared, data)
	} else {
		next, err = config.Parse(a.cfg.Path, data)
	}
	if err != nil {
		return nil, err
	}
	next.Zone = a.cfg.Zone
	return next, nil
}

// routingOf is endpoint e of next as the proxy runs it: read weights by the topology's slots.
func (a *App) routingOf(next *config.Config, e config.Endpoint) (proxy.Endpoint, error) {
	return endpoint(next, e, a.slotNames())
}

// slotNames names the node in each of the topology's slots ("" for a free one).
func (a *App) slotNames() []string {
	snap := a.topo.Snapshot()
	names := make([]string, len(snap.Nodes))
	for i, n := range snap.Nodes {
		if !snap.IsRemoved(i) {
			names[i] = n.Name
		}
	}
	return names
}

// invalid turns the configuration's validation errors into the API's: the first problem's key
// (relative to its endpoint when it is an endpoint setting) and every problem's message.
func invalid(err error) error {
	var ce *config.Error
	field := ""
	if errors.As(err, &ce) {
		field = ce.Key
		if i := strings.Index(field, "]."); strings.HasPrefix(field, "endpoints[") && i > 0 {
			field = field[i+2:]
		}
	}
	msgs := strings.Split(err.Error(), "\n")
	for i, m := range msgs {
		// "file:line: key: message": the file's line means little to an API client.
		if _, rest, ok := strings.Cut(m, ": "); ok && ce != nil && ce.File != "" && strings.HasPrefix(m, ce.File) {
			msgs[i] = rest
		}
	}
	return admin.Errorf(admin.Invalid, field, "%s", strings.Join(msgs, "; "))
}

// applyEndpoint puts endpoint name's settings from next in force, as one change.
func (a *App) applyEndpoint(next *config.Config, name string) error {
	_, ep, err := a.endpointIn(next, name)
	if err != nil {
		return err
	}
	return a.proxy.UpdateEndpoint(name, ep.Settings())
}

// endpointIn is endpoint name of next, and as the proxy runs it.
func (a *App) endpointIn(next *config.Config, name string) (*config.Endpoint, proxy.Endpoint, error) {
	e := next.Endpoint(name)
	if e == nil {
		return nil, proxy.Endpoint{}, fmt.Errorf("no endpoint is named %q", name)
	}
	ep, err := a.routingOf(next, *e)
	return e, ep, err
}

// persist writes data to the configuration file, unless the file changed on disk since sluice
// last read or wrote it (the operator's edit is not overwritten: reload it first).
func (a *App) persist(data []byte) (bool, string) {
	if a.cluster != nil {
		return true, "" // stored before it was applied (share)
	}
	path := a.cfg.Path
	if path == "" {
		return false, "sluice was not started from a configuration file"
	}
	onDisk, err := os.ReadFile(path)
	if err != nil {
		return false, err.Error()
	}
	if !bytes.Equal(onDisk, a.disk) {
		return false, "the file changed on disk since sluice read it: reload it (POST /v1/reload) first; the change is in force but not written"
	}
	if err := config.WriteFile(path, data); err != nil {
		return false, err.Error()
	}
	a.disk = data
	return true, ""
}

// Reload implements admin.Control (and SIGHUP): the file is read again and validated; what
// changed in the endpoints' settings takes effect as a PATCH would; what can change only at a
// restart is listed. An invalid file changes nothing.
func (a *App) Reload() (ch admin.Change, err error) {
	a.changeMu.Lock()
	defer a.changeMu.Unlock()
	defer func() { a.counted("reload", err) }()
	data, err := os.ReadFile(a.cfg.Path)
	if err != nil {
		return admin.Change{}, admin.Errorf(admin.Unreadable, "", "reading %s: %v", a.cfg.Path, err)
	}
	if c := a.cluster; c != nil {
		// With a store, the file holds this sluice's own settings: they are read again, with
		// the stored configuration in force.
		prev := c.boot
		c.boot = data
		if ch, err = a.reloadText(a.raw, false); err != nil {
			c.boot = prev
		}
		return ch, err
	}
	if ch, err = a.reloadText(data, false); err == nil {
		a.disk = data
	}
	return ch, err
}

// reloadText puts the configuration data in force as a reload does (under changeMu): what
// changed in the endpoints and nodes takes effect, what needs a restart is listed. An invalid
// text changes nothing. stored: the text is one another sluice node stored, which this one
// follows (a node it removed is removed here even if this node still holds connections to it).
func (a *App) reloadText(data []byte, stored bool) (ch admin.Change, err error) {
	next, err := a.parse(data)
	if err != nil {
		a.log.Error("reload refused: the configuration file is invalid; nothing changed", "err", err)
		return admin.Change{}, invalid(err)
	}
	ch = admin.Change{Persisted: true, Changed: []string{}}
	old := map[string]config.Endpoint{}
	for _, e := range a.cfg.Endpoints {
		old[e.Name] = e
	}
	// First every change is built and checked, then applied: an endpoint that cannot take its
	// settings changes nothing at all.
	var update, start []string
	for _, e := range next.Endpoints {
		o, ok := old[e.Name]
		delete(old, e.Name)
		if !ok {
			start = append(start, e.Name)
			continue
		}
		if o.Listen != e.Listen || o.TLS != e.TLS {
			ch.Restart = append(ch.Restart, "endpoints."+e.Name+".listen/tls")
		}
		o.Listen, o.TLS = e.Listen, e.TLS
		if !reflect.DeepEqual(o, e) {
			update = append(update, e.Name)
		}
	}
	for _, e := range next.Endpoints {
		if slices.Contains(update, e.Name) || slices.Contains(start, e.Name) {
			if _, err := a.routingOf(next, e); err != nil {
				return admin.Change{}, admin.Errorf(admin.Invalid, "", "endpoint %s: %v", e.Name, err)
			}
		}
	}
	nodesChanged, err := a.reloadNodes(next, &ch, stored)
	if err != nil {
		a.log.Error("reload refused; nothing changed", "err", err)
		return admin.Change{}, err
	}
	if nodesChanged {
		// Every endpoint's weights follow the nodes.
		for _, e := range next.Endpoints {
			if !slices.Contains(update, e.Name) && !slices.Contains(start, e.Name) {
				update = append(update, e.Name)
			}
		}
	}
	for _, name := range update {
		if err := a.applyEndpoint(next, name); err != nil {
			a.log.Error("reload: an endpoint did not take its settings", "endpoint", name, "err", err)
			ch.Restart = append(ch.Restart, "endpoints."+name+" (not applied: "+err.Error()+")")
			continue
		}
		ch.Changed = append(ch.Changed, "endpoints."+name)
		if changes := endpointChanges(a.cfg.Endpoint(name), next.Endpoint(name)); changes != nil {
			a.log.Info("reload: endpoint changed", "endpoint", name, slog.Group("changed", changes...))
		}
	}
	for _, name := range start {
		if err := a.startEndpoint(next, name); err != nil {
			a.log.Error("reload: the new endpoint did not start", "endpoint", name, "err", err)
			ch.Restart = append(ch.Restart, "endpoints."+name+" (new; did not start: "+err.Error()+")")
			continue
		}
		ch.Changed = append(ch.Changed, "endpoints."+name+" (new)")
		a.log.Info("reload: endpoint created", "endpoint", name, slog.Group("settings", endpointChanges(nil, next.Endpoint(name))...))
	}
	for name := range old {
		a.log.Info("reload: endpoint removed", "endpoint", name, "grace", a.boot.Timeouts.Shutdown.Duration)
		a.stopEndpoint(name)
		ch.Changed = append(ch.Changed, "endpoints."+name+" (removed)")
	}
	// What only a restart changes, against what sluice started with.
	b := a.boot
	for _, k := range []struct {
		key      string
		old, new any
	}{{"users", b.Users, next.Users}, {"monitor", b.Monitor, next.Monitor},
		{"admin", b.Admin, next.Admin}, {"log.format", b.Log.Format, next.Log.Format}, {"timeouts", b.Timeouts, next.Timeouts},
		{"tls", b.TLS, next.TLS}, {"backend_tls", b.BackendTLS, next.BackendTLS},
		{"backend_compress", b.BackendCompress, next.BackendCompress}, {"limits", b.Limits, next.Limits},
		{"threads", b.Threads, next.Threads}, {"accounts", b.Accounts, next.Accounts},
		{"store", b.Store, next.Store}, {"name", b.Name, next.Name}} {
		if !reflect.DeepEqual(k.old, k.new) {
			ch.Restart = append(ch.Restart, k.key)
		}
	}
	// log.level changes live (the level of the logger NewLogger built); with another logger,
	// only a restart changes it.
	if a.cfg.Log.Level != next.Log.Level {
		if a.setLogLevel(a.cfg.Log.Level, next.Log.Level) {
			ch.Changed = append(ch.Changed, "log.level")
		} else if next.Log.Level != b.Log.Level {
			ch.Restart = append(ch.Restart, "log.level")
		}
	}
	slices.Sort(ch.Restart)
	a.setConfig(next, data)
	a.log.Info("configuration reloaded", "changed", strings.Join(ch.Changed, ","), "restart_needed", strings.Join(ch.Restart, ","))
	return ch, nil
}

// Stats gathers what /metrics reports.
func (a *App) Stats() admin.Stats {
	cfg := a.config()
	var st admin.Stats
	st.ConsistencyWaits, st.ConsistencyTimeouts, st.PrimaryPositionReads = a.proxy.ConsistencyCounts()
	st.AuthBlocked = a.proxy.AuthBlocked()
	st.Pools = a.Pools()
	// sluice_node_state's lagging: past the tightest endpoint's max_replica_lag (the API says
	// which endpoint reads from which node).
	var maxLag time.Duration
	for _, e := range cfg.Endpoints {
		if d := e.MaxReplicaLag.Duration; d > 0 && (maxLag == 0 || d < maxLag) {
			maxLag = d
		}
	}
	nodes := a.nodesOf(maxLag)
	lat := make([]admin.Histogram, len(nodes))
	for i := range lat {
		lat[i] = admin.Histogram{Bounds: proxy.LatencyBuckets, Counts: make([]uint64, len(proxy.LatencyBuckets)+1)}
	}
	for _, e := range cfg.Endpoints {
		es := a.proxy.EndpointStats(e.Name)
		cs := a.proxy.ClientStats(e.Name)
		as := admin.EndpointStat{Name: e.Name, Sessions: es.Sessions, Accepted: cs.Accepted, AuthFailures: cs.AuthFailures,
			Errors: cs.Errors, BytesIn: cs.BytesIn, BytesOut: cs.BytesOut, Refused: make(map[string]uint64, len(cs.Refused))}
		for i, n := range cs.Refused {
			as.Refused[proxy.RefusalReasons[i]] = n
		}
		as.Pinned = make(map[string]int64, len(es.Pinned))
		for i, n := range es.Pinned {
			as.Pinned[route.PinNames[i]] = n
		}
		for r, byNode := range es.ByRoute {
			for i, n := range byNode {
				if n > 0 && i < len(nodes) {
					as.Routes = append(as.Routes, admin.RouteStat{Node: nodes[i].Name, Reason: route.Reason(r).Label(), Statements: n})
				}
			}
		}
		for i := range min(len(es.Latency), len(lat)) {
			for b, n := range es.Latency[i] {
				lat[i].Counts[b] += n
			}
			lat[i].Sum += es.LatencySum[i].Seconds()
		}
		st.Endpoints = append(st.Endpoints, as)
	}
	for i, n := range nodes {
		if n.State == "removed" {
			continue
		}
		ns := admin.NodeStat{Name: n.Name, Role: n.Role, State: n.State, Connections: n.Connections, Active: n.Active,
			ThreadsConnected: n.Threads, Latency: lat[i]}
		if n.LagMs != nil {
			s := float64(*n.LagMs) / 1000
			ns.LagSeconds = &s
		}
		if n.Version != "" {
			s := n.RTTMs / 1000
			ns.RTTSeconds = &s
			ro := n.ReadOnly
			ns.ReadOnly = &ro
		}
		st.Nodes = append(st.Nodes, ns)
	}
	a.changeMu.Lock()
	st.AdminChanges = maps.Clone(a.changes)
	a.changeMu.Unlock()
	return st
}

// counted records an admin change of kind with err's outcome (under changeMu).
func (a *App) counted(kind string, err error) {
	outcome := "applied"
	if err != nil {
		outcome = "refused"
	}
	if a.changes == nil {
		a.changes = map[[2]string]uint64{}
	}
	a.changes[[2]string{kind, outcome}]++
}

// DrainNode implements admin.Control.
func (a *App) DrainNode(name string, timeout time.Duration) (n admin.Node, err error) {
	a.changeMu.Lock()
	defer a.changeMu.Unlock()
	defer func() { a.counted("drain_node", err) }()
	i := a.nodeIndex(name)
	if i < 0 {
		return admin.Node{}, admin.Errorf(admin.NotFound, "", "no node is named %q", name)
	}
	if snap := a.topo.Snapshot(); snap.IsPrimary(i) {
		return admin.Node{}, admin.Errorf(admin.Conflict, "", "%s is the primary: switch over to another node first", name)
	}
	// With a store, every sluice node drains it: recorded there first.
	if err := a.shareDrain(name, timeout, true); err != nil {
		return admin.Node{}, err
	}
	if err := a.drain(i, name, timeout, "the admin API"); err != nil {
		return admin.Node{}, err
	}
	return a.nodesOf(0)[i], nil
}

// drain takes node i out of service (under changeMu): new reads and bindings at once,
// sessions at their next statement boundary, what is left closed after timeout.
func (a *App) drain(i int, name string, timeout time.Duration, from string) error {
	if err := a.topo.SetDraining(i, true); err != nil {
		return admin.Errorf(admin.Conflict, "", "%v", err)
	}
	if t := a.drainTimers[i]; t != nil {
		t.Stop()
	}
	if a.drainTimers == nil {
		a.drainTimers = map[int]*time.Timer{}
	}
	a.drainTimers[i] = time.AfterFunc(timeout, func() {
		if snap := a.topo.Snapshot(); !snap.IsDraining(i) || snap.IsPrimary(i) {
			return // undrained, or promoted since (the topology ends its drain)
		}
		if closed := a.proxy.CloseNodeConns(i); closed > 0 {
			a.log.Warn("drain timeout: closed the connections left on the node", "node", name, "connections", closed, "timeout", timeout)
		}
	})
	released := a.proxy.ReleaseIdle(i)
	a.log.Info("drain started from "+from, "node", name, "timeout", timeout, "idle_connections_closed", released)
	// Sessions that were idle too briefly at the start are released as they stay idle.
	go func(deadline time.Time) {
		for time.Now().Before(deadline) {
			time.Sleep(500 * time.Millisecond)
			snap := a.topo.Snapshot()
			if !snap.IsDraining(i) || snap.Load[i].Conns.Load() == 0 {
				return
			}
			a.proxy.ReleaseIdle(i)
		}
	}(time.Now().Add(timeout))
	return nil
}

// UndrainNode implements admin.Control.
func (a *App) UndrainNode(name string) (n admin.Node, err error) {
	a.changeMu.Lock()
	defer a.changeMu.Unlock()
	defer func() { a.counted("undrain_node", err) }()
	i := a.nodeIndex(name)
	if i < 0 {
		return admin.Node{}, admin.Errorf(admin.NotFound, "", "no node is named %q", name)
	}
	if err := a.shareDrain(name, 0, false); err != nil {
		return admin.Node{}, err
	}
	if err := a.undrain(i, name, "the admin API"); err != nil {
		return admin.Node{}, err
	}
	return a.nodesOf(0)[i], nil
}

// undrain puts node i back in service (under changeMu).
func (a *App) undrain(i int, name, from string) error {
	if t := a.drainTimers[i]; t != nil {
		t.Stop()
		delete(a.drainTimers, i)
	}
	if err := a.topo.SetDraining(i, false); err != nil {
		return admin.Errorf(admin.Conflict, "", "%v", err)
	}
	a.log.Info("drain ended from "+from+": the node takes reads again", "node", name)
	return nil
}

// nodeIndex is the slot of node name, or -1.
func (a *App) nodeIndex(name string) int {
	snap := a.topo.Snapshot()
	for i, n := range snap.Nodes {
		if n.Name == name && !snap.IsRemoved(i) {
			return i
		}
	}
	return -1
}

// CreateEndpoint implements admin.Control: a new endpoint, validated as in the file, listening
// at once, written back to the file.
func (a *App) CreateEndpoint(body map[string]json.RawMessage) (ch admin.Change, err error) {
	a.changeMu.Lock()
	defer a.changeMu.Unlock()
	defer func() { a.counted("create_endpoint", err) }()
	name, err := newName(body, "endpoint")
	if err != nil {
		return admin.Change{}, err
	}
	if a.proxy.HasEndpoint(name) {
		return admin.Change{}, admin.Errorf(admin.Conflict, "name", "an endpoint is named %q already", name)
	}
	set := map[string]any{}
	for k, raw := range body {
		if k == "name" {
			continue
		}
		if k != "listen" && k != "tls" && !slices.Contains(patchable, k) {
			return admin.Change{}, admin.Errorf(admin.Invalid, k, "unknown setting")
		}
		v, err := patchValue(k, raw)
		if err != nil {
			return admin.Change{}, err
		}
		set[k] = v
	}
	data, next, err := a.edited(config.AddEndpoint(a.cfg.Path, a.raw, name, set))
	if err != nil {
		return admin.Change{}, err
	}
	if a.cluster != nil {
		if _, _, err := a.endpointIn(next, name); err != nil {
			return admin.Change{}, admin.Errorf(admin.Invalid, "", "%v", err)
		}
		if err := a.share(data); err != nil {
			return admin.Change{}, err
		}
		// Stored: every node starts it. Here too, unless its address is taken.
		ch = admin.Change{Changed: []string{"endpoints." + name + " (new)"}, Persisted: true}
		if err := a.startEndpoint(next, name); err != nil {
			ch.Changed = nil
			ch.Restart = []string{"endpoints." + name + " (new; did not start here: " + err.Error() + ")"}
		}
		a.setConfig(next, data)
		for _, e := range a.endpointsOf(next) {
			if e.Name == name {
				ch.Endpoint = &e
			}
		}
		return ch, nil
	}
	if err := a.startEndpoint(next, name); err != nil {
		return admin.Change{}, admin.Errorf(admin.Conflict, "listen", "%v", err)
	}
	ch = admin.Change{Changed: []string{"endpoints." + name + " (new)"}}
	ch.Persisted, ch.PersistError = a.persist(data)
	a.setConfig(next, data)
	a.log.Info("endpoint created from the admin API", "endpoint", name, "persisted", ch.Persisted,
		slog.Group("settings", endpointChanges(nil, next.Endpoint(name))...))
	for _, e := range a.endpointsOf(next) {
		if e.Name == name {
			ch.Endpoint = &e
		}
	}
	return ch, nil
}

// startEndpoint adds endpoint name of next to the proxy and starts it.
func (a *App) startEndpoint(next *config.Config, name string) error {
	_, ep, err := a.endpointIn(next, name)
	if err != nil {
		return err
	}
	if err := a.proxy.AddEndpoint(ep); err != nil {
		return err
	}
	ln, err := a.listen(name)
	if err != nil {
		a.proxy.RemoveEndpoint(name, 0)
		return err
	}
	a.serve(name, ln)
	return nil
}

// DeleteEndpoint implements admin.Control: the endpoint stops accepting at once; its sessions
// may finish until timeouts.shutdown, then what is left is closed.
func (a *App) DeleteEndpoint(name string) (ch admin.Change, err error) {
	a.changeMu.Lock()
	defer a.changeMu.Unlock()
	defer func() { a.counted("delete_endpoint", err) }()
	if !a.proxy.HasEndpoint(name) {
		return admin.Change{}, admin.Errorf(admin.NotFound, "", "no endpoint is named %q", name)
	}
	data, next, err := a.edited(config.RemoveEndpoint(a.cfg.Path, a.raw, name))
	if err != nil {
		return admin.Change{}, err
	}
	if err := a.share(data); err != nil {
		return admin.Change{}, err
	}
	a.stopEndpoint(name)
	ch = admin.Change{Changed: []string{"endpoints." + name + " (removed)"}}
	ch.Persisted, ch.PersistError = a.persist(data)
	a.setConfig(next, data)
	a.log.Info("endpoint deleted from the admin API", "endpoint", name, "grace", a.boot.Timeouts.Shutdown.Duration, "persisted", ch.Persisted)
	return ch, nil
}

// stopEndpoint removes endpoint name: no new connections; its sessions finish within
// timeouts.shutdown.
func (a *App) stopEndpoint(name string) {
	a.proxy.RemoveEndpoint(name, a.boot.Timeouts.Shutdown.Duration)
	a.mu.Lock()
	delete(a.addrs, name)
	a.mu.Unlock()
}
