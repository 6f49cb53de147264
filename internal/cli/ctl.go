package cli

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/sluicedb/sluice/internal/admin"
	"github.com/sluicedb/sluice/internal/config"
)

// ctl is one invocation of sluice ctl.
type ctl struct {
	base, token string
	json        bool
	client      *http.Client
	stdout      io.Writer
	colour      bool
}

func runCtl(args []string, stdout, stderr io.Writer) int {
	l, err := parseCtl(args)
	if err != nil {
		fmt.Fprintf(stderr, "sluice ctl: %v\n\n", err)
		l.usage(stderr)
		return 2
	}
	if l.help {
		l.usage(stdout)
		return 0
	}
	f := &l.flags
	c := &ctl{base: f.admin, token: f.token, json: f.output == "json", stdout: stdout,
		client: &http.Client{Timeout: 30 * time.Second}}
	fileToken, trust := "", f.ca
	if f.config != "" {
		// Only the admin section and tls.cert: ctl must work without the proxy's secrets
		// (users' ${NAME} passwords) and while the rest of the file is being edited.
		acc, err := config.LoadAdminAccess(f.config)
		if err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
		if c.base == "" && acc.Admin.Listen != "" {
			scheme := "http"
			if acc.Admin.TLS {
				scheme = "https"
			}
			c.base = scheme + "://" + dialable(acc.Admin.Listen)
		}
		fileToken = acc.Admin.Token
		if trust == "" {
			trust = acc.Cert // the certificate the admin listener serves
		}
	}
	if c.base == "" {
		c.base = "http://127.0.0.1:6080"
	}
	if !strings.Contains(c.base, "://") {
		c.base = "http://" + c.base
	}
	c.base = strings.TrimRight(c.base, "/")
	// The token: --token, else the environment's, else the file's.
	if c.token == "" {
		c.token = os.Getenv("SLUICE_ADMIN_TOKEN")
	}
	if c.token == "" {
		c.token = fileToken
	}
	if strings.HasPrefix(c.base, "https://") {
		tc := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: f.insecure}
		if trust != "" && !f.insecure {
			pem, err := os.ReadFile(trust)
			if err != nil {
				fmt.Fprintf(stderr, "sluice ctl: %v\n", err)
				return 1
			}
			tc.RootCAs = x509.NewCertPool()
			if !tc.RootCAs.AppendCertsFromPEM(pem) {
				fmt.Fprintf(stderr, "sluice ctl: %s holds no PEM certificate\n", trust)
				return 1
			}
		}
		c.client.Transport = &http.Transport{TLSClientConfig: tc}
	}
	if f, ok := stdout.(*os.File); ok && !c.json {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 && os.Getenv("NO_COLOR") == "" {
			c.colour = true
		}
	}
	if err := l.cmd.run(c, l.args, f); err != nil {
		fmt.Fprintf(stderr, "sluice ctl: %v\n", err)
		if _, ok := err.(*usageError); ok {
			return 2
		}
		return 1
	}
	return 0
}

// createRun is the run of create-endpoint and create-node: a POST to /v1/KIND.
func createRun(kind string) func(c *ctl, args []string, _ *ctlFlags) error {
	return func(c *ctl, args []string, _ *ctlFlags) error {
		body, err := parseSettings(args[1:])
		if err != nil {
			return &usageError{err.Error()}
		}
		body["name"] = args[0]
		var ch admin.Change
		return c.do("POST", "/v1/"+kind, body, &ch, func(any) {
			c.printChange(ch, false)
			if ch.Endpoint != nil {
				fmt.Fprintln(c.stdout)
				c.printEndpoint(*ch.Endpoint)
			}
			if ch.Node != nil {
				fmt.Fprintf(c.stdout, "%s: %s at %s\n", ch.Node.Name, ch.Node.State, ch.Node.Address)
			}
		})
	}
}

// deleteRun is the run of delete-endpoint and delete-node: a DELETE of /v1/KIND/NAME.
func deleteRun(kind string) func(c *ctl, args []string, _ *ctlFlags) error {
	return func(c *ctl, args []string, _ *ctlFlags) error {
		var ch admin.Change
		return c.do("DELETE", "/v1/"+kind+"/"+url.PathEscape(args[0]), nil, &ch, func(any) { c.printChange(ch, false) })
	}
}

// dialable turns a listen address into one to connect to: an empty or unspecified host is
// this host.
func dialable(listen string) string {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return listen
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}

// do sends a request; the answer is decoded into out and shown by show (as JSON with -o json).
func (c *ctl) do(method, path string, body any, out any, show func(any)) error {
	data, err := c.request(method, path, body)
	if err != nil {
		return err
	}
	if c.json {
		_, err := c.stdout.Write(data)
		return err
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return fmt.Errorf("the admin API's answer: %w", err)
		}
		escapeStrings(reflect.ValueOf(out))
	}
	show(out)
	return nil
}

// httpError is the admin API's refusal: its status and its error's words.
type httpError struct {
	status int
	msg    string
}

func (e *httpError) Error() string { return e.msg }

// request sends a request and returns the answer's body; an answer other than 2xx is an
// *httpError.
func (c *ctl) request(method, path string, body any) ([]byte, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, c.base+path, rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("cannot reach the admin API: %w", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		var e struct{ Error admin.Error }
		if json.Unmarshal(data, &e) == nil && e.Error.Message != "" {
			return nil, &httpError{resp.StatusCode, fmt.Sprintf("%s (HTTP %d)", printable(e.Error.Error()), resp.StatusCode)}
		}
		return nil, &httpError{resp.StatusCode, fmt.Sprintf("HTTP %d: %s", resp.StatusCode, printable(string(bytes.TrimSpace(data))))}
	}
	return data, nil
}

func (c *ctl) status() error {
	var p admin.Proxy
	return c.do("GET", "/v1/proxy", nil, &p, func(any) {
		fmt.Fprintf(c.stdout, "sluice %s, up %s, zone %q, %d sessions, config %s\n", p.Version,
			time.Duration(p.UptimeSeconds*float64(time.Second)).Round(time.Second), p.Zone, p.Sessions, p.ConfigFile)
		if p.Store != nil {
			c.printStore(*p.Store, time.Now())
		}
		fmt.Fprintln(c.stdout)
		w := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(w, "NODE\tROLE\tSTATE\tLAG\tZONE\tCONNS\tACTIVE\tRTT\tPOSITION\tSOURCE\tERROR")
		for _, n := range p.Nodes {
			lag := "-"
			if n.LagSeconds != nil {
				lag = time.Duration(*n.LagSeconds * float64(time.Second)).Round(time.Millisecond).String()
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%d\t%d\t%.2fms\t%s\t%s\t%s\n", n.Name, n.Role, c.paint(n.State), lag, orDash(n.Zone),
				n.Connections, n.Active, n.RTTMs, orDash(n.GTIDPosition), orDash(n.PositionSource), n.Error)
		}
		w.Flush()
		fmt.Fprintln(c.stdout)
		c.endpointTable(p.Endpoints)
		fmt.Fprintln(c.stdout)
		w = tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(w, "ENDPOINT\tREADS FROM\tNOT FROM")
		for _, e := range p.Endpoints {
			from, not := readsFrom(e.Reads)
			fmt.Fprintf(w, "%s\t%s\t%s\n", e.Name, from, not)
		}
		w.Flush()
	})
}

// readsFrom words which nodes take an endpoint's new reads now, and which do not and why.
func readsFrom(rs []admin.NodeReads) (from, not string) {
	var yes, no []string
	for _, r := range rs {
		if r.Reads {
			yes = append(yes, r.Node)
		} else {
			no = append(no, r.Node+" ("+r.Why+")")
		}
	}
	return orDash(strings.Join(yes, ",")), orDash(strings.Join(no, ", "))
}

func (c *ctl) endpointTable(es []admin.Endpoint) {
	w := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "ENDPOINT\tMODE\tADDRESS\tSESSIONS\tSTATEMENTS\tBALANCE\tCONSISTENCY\tMAX LAG\tREAD WEIGHTS\tSTATEMENTS BY NODE")
	for _, e := range es {
		s := e.Settings
		fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%d\t%s\t%s\t%s\t%s\t%s\n", e.Name, s.Mode, e.Address, e.Sessions, e.Statements, s.Balance,
			s.Consistency, s.MaxReplicaLag, pairs(s.ReadWeights), pairs(e.StatementsByNode))
	}
	w.Flush()
}

func (c *ctl) endpoint(name string) error {
	var e admin.Endpoint
	return c.do("GET", "/v1/endpoints/"+url.PathEscape(name), nil, &e, func(any) { c.printEndpoint(e) })
}

func (c *ctl) printEndpoint(e admin.Endpoint) {
	s := e.Settings
	w := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	for _, kv := range [][2]string{
		{"name", e.Name}, {"listen", e.Listen}, {"address", e.Address}, {"mode", s.Mode},
		{"read_weights", pairs(s.ReadWeights)}, {"balance", s.Balance}, {"connections_from", s.ConnectionsFrom},
		{"nearest_zone", strconv.FormatBool(s.NearestZone)}, {"max_replica_lag", s.MaxReplicaLag},
		{"consistency", s.Consistency}, {"consistency_timeout", s.ConsistencyTimeout},
		{"transaction_split", strconv.FormatBool(s.TransactionSplit)}, {"max_connections", strconv.Itoa(s.MaxConnections)},
		{"multi_statements", s.MultiStatements}, {"tls", s.TLS}, {"allow", orAny(s.Allow)},
		{"sessions", strconv.FormatInt(e.Sessions, 10)}, {"statements", strconv.FormatUint(e.Statements, 10)},
		{"statements_by_node", pairs(e.StatementsByNode)},
	} {
		fmt.Fprintf(w, "%s\t%s\n", kv[0], kv[1])
	}
	from, not := readsFrom(e.Reads)
	for _, kv := range [][2]string{{"reads_from", from}, {"not_from", not}} {
		fmt.Fprintf(w, "%s\t%s\n", kv[0], kv[1])
	}
	w.Flush()
}

func (c *ctl) patch(name string, patch map[string]any) error {
	var ch admin.Change
	return c.do("PATCH", "/v1/endpoints/"+url.PathEscape(name), patch, &ch, func(any) {
		c.printChange(ch, false)
		if ch.Endpoint != nil {
			fmt.Fprintln(c.stdout)
			c.printEndpoint(*ch.Endpoint)
		}
	})
}

// orAny shows an endpoint's allow list; empty means every client may connect.
func orAny(allow []string) string {
	if len(allow) == 0 {
		return "any"
	}
	return strings.Join(allow, ",")
}

// printChange prints the answer to a change. A reload read the file rather than wrote it, so
// its answer's persisted (always true) says nothing worth printing.
func (c *ctl) printChange(ch admin.Change, reload bool) {
	if len(ch.Changed) == 0 {
		fmt.Fprintln(c.stdout, "nothing changed")
	} else {
		fmt.Fprintf(c.stdout, "changed: %s\n", strings.Join(ch.Changed, ", "))
	}
	switch {
	case reload: // the file is what sluice just read
	case ch.Persisted:
		fmt.Fprintln(c.stdout, "written to the configuration file")
	default:
		fmt.Fprintf(c.stdout, "NOT written to the configuration file: %s\n", ch.PersistError)
	}
	if len(ch.Restart) > 0 {
		fmt.Fprintf(c.stdout, "changed in the file, in force only after a restart: %s\n", strings.Join(ch.Restart, ", "))
	}
}

func (c *ctl) pools() error {
	var out struct{ Pools []admin.Pool }
	return c.do("GET", "/v1/pools", nil, &out, func(any) {
		w := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(w, "NODE\tUSER\tOPEN\tIDLE\tIN USE\tWAITING\tCREATED\tREUSED\tRESETS\tRESET FAILURES\tWAITS\tWAITED")
		for _, p := range out.Pools {
			fmt.Fprintf(w, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\n", p.Node, p.User, p.Open, p.Idle, p.InUse, p.Waiting,
				p.Created, p.Reused, p.Resets, p.ResetFailures, p.Waits, time.Duration(p.WaitSeconds*float64(time.Second)).Round(time.Millisecond))
		}
		w.Flush()
	})
}

func (c *ctl) sessions() error {
	var out struct{ Sessions []admin.Session }
	return c.do("GET", "/v1/sessions", nil, &out, func(any) {
		w := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(w, "ID\tUSER\tCLIENT\tENDPOINT\tNODES\tIN TX\tPINS\tAGE\tSTATEMENT")
		for _, s := range out.Sessions {
			stmt := "idle"
			if s.StatementSeconds != nil {
				stmt = (time.Duration(*s.StatementSeconds * float64(time.Second))).Round(time.Millisecond).String()
			}
			fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%s\t%v\t%s\t%s\t%s\n", s.ID, s.User, s.Client, s.Endpoint, orDash(strings.Join(s.Nodes, ",")),
				s.InTransaction, orDash(strings.Join(s.Pins, ",")), time.Duration(s.AgeSeconds*float64(time.Second)).Round(time.Second), stmt)
		}
		w.Flush()
	})
}

// paint colours a node state on a terminal.
func (c *ctl) paint(state string) string {
	if !c.colour {
		return state
	}
	code := "33" // yellow: lagging, full, switching, draining...
	switch state {
	case "up":
		code = "32"
	case "down", "writable", "auth_failed":
		code = "31"
	}
	return "\x1b[" + code + "m" + state + "\x1b[0m"
}

// pairs prints a map as name:value,... in name order.
func pairs[V int | uint64](m map[string]V) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%s:%d", k, m[k])
	}
	return orDash(b.String())
}

// parseSettings turns KEY=VALUE arguments into a PATCH body: read_weights as name:weight,...;
// booleans and integers as such; default as null (the setting's default).
func parseSettings(args []string) (map[string]any, error) {
	patch := map[string]any{}
	for _, a := range args {
		k, v, ok := strings.Cut(a, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("%q: want KEY=VALUE", a)
		}
		switch {
		case v == "default":
			patch[k] = nil
		case k == "read_weights":
			w := map[string]int{}
			for _, p := range strings.Split(v, ",") {
				name, n, ok := strings.Cut(p, ":")
				weight, err := strconv.Atoi(n)
				if !ok || err != nil {
					return nil, fmt.Errorf("read_weights %q: want NAME:WEIGHT,... (an endpoint's: primary:0,replica1:100; a new node's: rw:100,ro:100)", v)
				}
				w[name] = weight
			}
			patch[k] = w
		case k == "allow":
			patch[k] = strings.Split(v, ",")
		case k == "nearest_zone" || k == "transaction_split":
			b, err := strconv.ParseBool(v)
			if err != nil {
				return nil, fmt.Errorf("%s %q: want true or false", k, v)
			}
			patch[k] = b
		case k == "max_connections":
			n, err := strconv.Atoi(v)
			if err != nil {
				return nil, fmt.Errorf("%s %q: want a number", k, v)
			}
			patch[k] = n
		default:
			patch[k] = v
		}
	}
	return patch, nil
}

// printable escapes what a terminal would act on in s: control characters (C0, DEL, C1) and
// Unicode format characters (bidirectional overrides), written as Go escapes (\x1b, \u202e),
// and invalid UTF-8. Names sluice refuses to take (config.CheckName) could still come from an
// older sluice, and statements and user names are the clients' own text.
func printable(s string) string {
	clean := utf8.ValidString(s)
	for _, r := range s {
		if unsafeRune(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i, w := 0, 0; i < len(s); i += w {
		r, n := utf8.DecodeRuneInString(s[i:])
		w = n
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case unsafeRune(r):
			q := strconv.QuoteRune(r) // '\x1b', '\u202e'
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func unsafeRune(r rune) bool { return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) }

// escapeStrings makes every string in the decoded answer v points to printable, map keys
// included, before anything of it is printed.
func escapeStrings(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return
		}
		e := v.Elem()
		if v.Kind() == reflect.Interface {
			// An interface's value cannot be changed in place: escape a copy and put it back.
			c := reflect.New(e.Type()).Elem()
			c.Set(e)
			escapeStrings(c)
			if v.CanSet() {
				v.Set(c)
			}
			return
		}
		escapeStrings(e)
	case reflect.String:
		if v.CanSet() {
			v.SetString(printable(v.String()))
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				escapeStrings(v.Field(i))
			}
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			escapeStrings(v.Index(i))
		}
	case reflect.Map:
		if v.IsNil() {
			return
		}
		m := reflect.MakeMapWithSize(v.Type(), v.Len())
		iter := v.MapRange()
		for iter.Next() {
			k := reflect.New(v.Type().Key()).Elem()
			k.Set(iter.Key())
			escapeStrings(k)
			e := reflect.New(v.Type().Elem()).Elem()
			e.Set(iter.Value())
			escapeStrings(e)
			m.SetMapIndex(k, e)
		}
		if v.CanSet() {
			v.Set(m)
		}
	}
}
