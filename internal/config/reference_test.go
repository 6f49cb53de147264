package config

import (
	"errors"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// REFERENCE.md's key tables are made from the configuration's own schema, so that they cannot
// drift from what Parse accepts:
//
//   - the keys: the yaml tags of Config and the types it holds, walked by reflection;
//   - the type: the field's Go type, and for an enumerated string the values Validate names
//     when it refuses a wrong one;
//   - the default: what Parse gives a file that leaves the key out (and what ApplyDefaults
//     gives a Config built in code, which must agree), under each context in defaultContexts;
//   - required: a key whose absence Parse reports as "required";
//   - what it does: the field's doc comment (and line comment) in this package's source;
//   - whether it changes while sluice runs: changeOf, which internal/app's
//     TestReferenceChanges checks against what the admin API and a reload really do.
//
// TestReferenceUpToDate fails when the checked-in file differs; run it with -update to rewrite
// the tables (prose outside the <!-- keys NAME --> ... <!-- end keys --> blocks is kept, and a
// section of keys the file has no block for yet is added before <!-- end sections -->).

var update = flag.Bool("update", false, "rewrite REFERENCE.md's key tables from the config structs")

// The ways a key takes a new value while sluice runs: the "changes" column. internal/app's
// TestReferenceChanges parses the column and checks each key of the first three kinds.
const (
	// ChangeAPI: PATCH /v1/endpoints/NAME (sluice ctl endpoint) and a reload put it in force.
	ChangeAPI = "API, reload"
	// ChangeReload: a reload (SIGHUP, POST /v1/reload, sluice ctl reload) puts it in force.
	ChangeReload = "reload"
	// ChangeRestart: only a restart does; a reload lists it under restart_needed.
	ChangeRestart = "restart"
	// changeNodeName and changeEndpointName are the names: a new name is a new node or endpoint.
	changeNodeName     = "API, reload: a new name adds a replica; a drained node no longer listed is removed"
	changeEndpointName = "API, reload: a new name adds an endpoint; one no longer listed stops"
)

// changeOf says how key (a reference path: "endpoints[].mode") changes while sluice runs;
// every key not named here needs a restart.
func changeOf(key string) string {
	switch key {
	case "endpoints[].allow", "endpoints[].balance", "endpoints[].connections_from", "endpoints[].consistency",
		"endpoints[].consistency_timeout", "endpoints[].max_connections", "endpoints[].max_replica_lag",
		"endpoints[].mode", "endpoints[].multi_statements", "endpoints[].nearest_zone",
		"endpoints[].read_weights", "endpoints[].transaction_split",
		"endpoints[].pool_mode", "endpoints[].pool.max_per_node", "endpoints[].pool.idle_timeout",
		"endpoints[].pool.max_lifetime", "endpoints[].pool.acquire_timeout", "endpoints[].pool.min_idle":
		return ChangeAPI
	case "pool.max_per_node", "pool.idle_timeout", "pool.max_lifetime", "pool.acquire_timeout", "pool.min_idle":
		return ChangeReload
	case "log.level":
		return ChangeReload
	case "endpoints[].name":
		return changeEndpointName
	case "backends[].name":
		return changeNodeName
	}
	return ChangeRestart
}

// defaultContexts are the settings some defaults depend on: a key whose default differs under
// one of them says so.
var defaultContexts = []struct {
	when    string
	section string // the keys it sets, whose own default it does not describe
	set     func(*Config)
}{
	{"when `tls.cert` is set", "tls", func(c *Config) { c.TLS.Cert, c.TLS.Key = "cert.pem", "key.pem" }},
	{"with `monitor.user`", "monitor", func(c *Config) { c.Monitor.User = "monitor" }},
}

// refKey is one key of the reference.
type refKey struct {
	Path    string // "endpoints[].mode", "zone"
	Section string // "top" for a top-level scalar, else the top-level key ("endpoints")
	Field   reflect.StructField
	Owner   reflect.Type // the struct that holds Field
}

// concrete is the key's path in a file with one item per list: "endpoints[0].mode".
func (k refKey) concrete() string { return strings.ReplaceAll(k.Path, "[]", "[0]") }

// schemaKeys walks Config's yaml tags: every key the decoder accepts, in struct order.
func schemaKeys() []refKey {
	var out []refKey
	var walk func(t reflect.Type, prefix, section string)
	walk = func(t reflect.Type, prefix, section string) {
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if !f.IsExported() || name == "" || name == "-" {
				continue
			}
			sec := section
			if sec == "" {
				sec = name
			}
			ft := f.Type
			switch {
			case ft.Kind() == reflect.Struct && ft != durationType:
				walk(ft, prefix+name+".", sec)
			case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct:
				walk(ft.Elem(), prefix+name+"[].", sec)
			default:
				if section == "" {
					sec = "top"
				}
				out = append(out, refKey{Path: prefix + name, Section: sec, Field: f, Owner: t})
			}
		}
	}
	walk(reflect.TypeFor[Config](), "", "")
	return out
}

// sections are the reference's sections in Config's order.
func sections(keys []refKey) []string {
	var out []string
	for _, k := range keys {
		if !slices.Contains(out, k.Section) {
			out = append(out, k.Section)
		}
	}
	return out
}

// fieldDocs reads the doc and line comments of the struct fields in this package's source:
// "Type.Field" -> text on one line.
func fieldDocs(t *testing.T) map[string]string {
	t.Helper()
	fset := token.NewFileSet()
	out := map[string]string{}
	files, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, fi := range files {
		name := fi.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			ts, ok := n.(*ast.TypeSpec)
			if !ok {
				return true
			}
			st, ok := ts.Type.(*ast.StructType)
			if !ok {
				return false
			}
			for _, fl := range st.Fields.List {
				text := strings.TrimSpace(strings.Join([]string{fl.Doc.Text(), fl.Comment.Text()}, " "))
				text = strings.Join(strings.Fields(text), " ")
				for _, id := range fl.Names {
					out[ts.Name.Name+"."+id.Name] = stripName(text, id.Name)
				}
			}
			return false
		})
	}
	return out
}

// stripName takes the Go name off the front of a field's comment ("Zone is where ..." ->
// "where ..."; "TransactionSplit: in a ..." -> "in a ..."): the table names the key.
func stripName(text, goName string) string {
	rest, ok := strings.CutPrefix(text, goName)
	if !ok || rest != "" && rest[0] != ' ' && rest[0] != ':' {
		return text
	}
	rest = strings.TrimPrefix(rest, ":")
	rest = strings.TrimSpace(rest)
	for _, verb := range []string{"is ", "are "} {
		if r, ok := strings.CutPrefix(rest, verb); ok {
			return r
		}
	}
	return rest
}

// baseFile is the smallest valid configuration: every key the reference describes is left out
// but those without a default.
func baseFile() map[string]any {
	return map[string]any{
		"users": []any{map[string]any{"name": "app", "password": "pw"}},
		"backends": []any{
			map[string]any{"name": "primary", "address": "127.0.0.1:3306", "role": "primary"},
			map[string]any{"name": "replica1", "address": "127.0.0.1:3307", "role": "replica"},
		},
		"endpoints": []any{map[string]any{"name": "rw", "listen": "127.0.0.1:0"}},
	}
}

// setPath sets (v != nil) or removes (v == nil) the key at a reference path in a file made by
// baseFile, giving each list one item.
func setPath(m map[string]any, path string, v any) {
	parts := strings.Split(path, ".")
	for _, p := range parts[:len(parts)-1] {
		name, list := strings.CutSuffix(p, "[]")
		if !list {
			sub, _ := m[name].(map[string]any)
			if sub == nil {
				sub = map[string]any{}
				m[name] = sub
			}
			m = sub
			continue
		}
		items, _ := m[name].([]any)
		if len(items) == 0 {
			items = []any{map[string]any{}}
			m[name] = items
		}
		m = items[0].(map[string]any)
	}
	last := parts[len(parts)-1]
	if v == nil {
		delete(m, last)
		return
	}
	m[last] = v
}

// valueIn is the value at a reference path of a file made by baseFile, and whether it is there.
func valueIn(m map[string]any, path string) (any, bool) {
	var cur any = m
	for _, p := range strings.Split(path, ".") {
		name, list := strings.CutSuffix(p, "[]")
		mm, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = mm[name]; !ok {
			return nil, false
		}
		if list {
			items, _ := cur.([]any)
			if len(items) == 0 {
				return nil, false
			}
			cur = items[0]
		}
	}
	return cur, true
}

// parseMap parses the file m, with no environment.
func parseMap(t *testing.T, m map[string]any) (*Config, []*Error) {
	t.Helper()
	data, err := yaml.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	c, err := parse("sluice.yaml", data, func(string) (string, bool) { return "", false })
	if err == nil {
		return c, nil
	}
	var list []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		list = j.Unwrap()
	} else {
		list = []error{err}
	}
	var out []*Error
	for _, e := range list {
		var ce *Error
		if !errors.As(e, &ce) {
			t.Fatalf("not a *config.Error: %v", e)
		}
		out = append(out, ce)
	}
	return nil, out
}

// valueAt is the value at a concrete path ("endpoints[0].mode") of c.
func valueAt(c *Config, path string) reflect.Value {
	v := reflect.ValueOf(c).Elem()
	for _, p := range strings.Split(path, ".") {
		name, list := strings.CutSuffix(p, "[0]")
		v = v.Field(fieldIndex(v.Type())[name])
		if list {
			v = v.Index(0)
		}
	}
	return v
}

// wantRE finds the accepted values in Validate's refusal of an enumerated setting.
var wantRE = regexp.MustCompile(`^invalid value "bogus-value" \(want (.*)\)$`)

// enumValues returns the values Validate accepts for the string key k, or nil when it is not
// an enumerated setting.
func enumValues(t *testing.T, k refKey) []string {
	t.Helper()
	if k.Field.Type.Kind() != reflect.String {
		return nil
	}
	m := baseFile()
	setPath(m, k.Path, "bogus-value")
	_, errs := parseMap(t, m)
	for _, e := range errs {
		if e.Key != k.concrete() {
			continue
		}
		sub := wantRE.FindStringSubmatch(e.Msg)
		if sub == nil {
			return nil
		}
		list, _, _ := strings.Cut(sub[1], ", or ")
		if !strings.Contains(list, " or ") {
			return nil
		}
		var vals []string
		for _, part := range strings.Split(list, ", ") {
			for _, v := range strings.Split(part, " or ") {
				if !regexp.MustCompile(`^[a-z0-9_-]+$`).MatchString(v) {
					return nil
				}
				vals = append(vals, v)
			}
		}
		return vals
	}
	return nil
}

// required reports whether Parse calls k required when a file leaves it out.
func required(t *testing.T, k refKey) bool {
	t.Helper()
	m := baseFile()
	setPath(m, k.Path, nil)
	_, errs := parseMap(t, m)
	for _, e := range errs {
		if e.Key == k.concrete() && strings.HasPrefix(e.Msg, "required") {
			return true
		}
	}
	return false
}

// typeOf is the "type" column.
func typeOf(k refKey, enum []string) string {
	ft := k.Field.Type
	switch {
	case enum != nil:
		vals := make([]string, len(enum))
		for i, v := range enum {
			vals[i] = "`" + v + "`"
		}
		return "one of " + strings.Join(vals, ", ")
	case ft == durationType:
		return "duration"
	case ft.Kind() == reflect.String:
		return "string"
	case ft.Kind() == reflect.Bool:
		return "bool"
	case ft.Kind() == reflect.Int:
		return "integer"
	case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.String:
		return "list of strings"
	case ft.Kind() == reflect.Map && ft.Key().Kind() == reflect.String && ft.Elem().Kind() == reflect.Int:
		return "map of backend name to integer"
	case ft.Kind() == reflect.Map && ft.Key().Kind() == reflect.String && ft.Elem().Kind() == reflect.String:
		return "map of endpoint name to host:port"
	}
	panic("reference: no type name for " + ft.String())
}

// render shows a value as the reference writes it.
func render(v reflect.Value, c *Config) string {
	if v.Type() == durationType {
		return "`" + shortDuration(v.Interface().(Duration).Duration) + "`"
	}
	switch v.Kind() {
	case reflect.String:
		if v.String() == "" {
			return "empty"
		}
		return "`" + v.String() + "`"
	case reflect.Bool:
		return fmt.Sprintf("`%v`", v.Bool())
	case reflect.Int:
		n := v.Int()
		switch {
		case n >= 1<<20 && n%(1<<20) == 0:
			return fmt.Sprintf("`%d` (%d MiB)", n, n>>20)
		case n >= 1<<10 && n%(1<<10) == 0 && n%1000 != 0:
			return fmt.Sprintf("`%d` (%d KiB)", n, n>>10)
		}
		return fmt.Sprintf("`%d`", n)
	case reflect.Slice:
		if v.Len() == 0 {
			return "empty"
		}
	case reflect.Map:
		if v.Type().Elem().Kind() != reflect.Int {
			return "empty"
		}
		// The default weights, by role: the names of baseFile's backends mean nothing.
		var parts []string
		for _, b := range c.Backends {
			parts = append(parts, fmt.Sprintf("%s `%d`", b.Role, v.MapIndex(reflect.ValueOf(b.Name)).Int()))
		}
		return "by role: " + strings.Join(slices.Compact(parts), ", ")
	}
	return fmt.Sprintf("`%v`", v.Interface())
}

// shortDuration writes d as an operator would: 1m, not 1m0s; 0, not 0s.
func shortDuration(d time.Duration) string {
	if d == 0 {
		return "0"
	}
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// defaultOf is the "default" column: what Parse gives a file that leaves k out, and what it
// gives under each context that changes it.
func defaultOf(t *testing.T, k refKey, parsed *Config, built map[string]*Config) string {
	t.Helper()
	if required(t, k) {
		return "required"
	}
	if _, in := valueIn(baseFile(), k.Path); in {
		return "none" // a key baseFile must give, without being required (users[].password)
	}
	if strings.HasPrefix(k.Path, "users[].pool.") {
		return "the endpoint's" // a user's pool keys override only when given (Config.PoolOf)
	}
	base := render(valueAt(parsed, k.concrete()), parsed)
	def := base
	for _, ctx := range defaultContexts {
		if k.Section == ctx.section {
			continue
		}
		c := built[ctx.when]
		if d := render(valueAt(c, k.concrete()), c); d != base {
			def += " (" + d + " " + ctx.when + ")"
		}
	}
	return def
}

// builtConfig is baseFile as a Config built in Go code, with ApplyDefaults.
func builtConfig(set func(*Config)) *Config {
	c := &Config{
		Users: []User{{Name: "app", Password: "pw"}},
		Backends: []Backend{{Name: "primary", Address: "127.0.0.1:3306", Role: RolePrimary},
			{Name: "replica1", Address: "127.0.0.1:3307", Role: RoleReplica}},
		Endpoints: []Endpoint{{Name: "rw", Listen: "127.0.0.1:0"}},
	}
	if set != nil {
		set(c)
	}
	c.ApplyDefaults()
	return c
}

// keyTables renders every section's table.
func keyTables(t *testing.T) map[string]string {
	t.Helper()
	keys := schemaKeys()
	docs := fieldDocs(t)
	parsed, errs := parseMap(t, baseFile())
	if errs != nil {
		t.Fatalf("the base file does not parse: %v", errs)
	}
	// A Config built in code gets the defaults a file gets.
	plain := builtConfig(nil)
	built := map[string]*Config{}
	for _, ctx := range defaultContexts {
		built[ctx.when] = builtConfig(ctx.set)
	}
	tables := map[string]*strings.Builder{}
	for _, k := range keys {
		if a, b := valueAt(parsed, k.concrete()), valueAt(plain, k.concrete()); !reflect.DeepEqual(a.Interface(), b.Interface()) {
			t.Errorf("%s: Parse's default %v differs from ApplyDefaults' %v", k.Path, a, b)
		}
		doc := docs[k.Owner.Name()+"."+k.Field.Name]
		if doc == "" {
			t.Errorf("%s (%s.%s) has no doc comment: it is the reference's text", k.Path, k.Owner.Name(), k.Field.Name)
		}
		b := tables[k.Section]
		if b == nil {
			b = &strings.Builder{}
			b.WriteString("| key | type | default | changes | what it does |\n| --- | --- | --- | --- | --- |\n")
			tables[k.Section] = b
		}
		fmt.Fprintf(b, "| `%s` | %s | %s | %s | %s |\n", k.Path, typeOf(k, enumValues(t, k)),
			defaultOf(t, k, parsed, built), changeOf(k.Path), strings.ReplaceAll(doc, "|", `\|`))
	}
	out := map[string]string{}
	for s, b := range tables {
		out[s] = b.String()
	}
	return out
}

const (
	referenceFile = "REFERENCE.md"
	blockEnd      = "<!-- end keys -->"
	sectionsEnd   = "<!-- end sections -->"
)

// blockStart opens section's generated table.
func blockStart(section string) string { return "<!-- keys " + section + " -->" }

// regenerate returns the reference text with every section's block replaced by tables.
func regenerate(t *testing.T, text string, order []string, tables map[string]string) string {
	t.Helper()
	for _, s := range order {
		start := blockStart(s)
		i := strings.Index(text, start)
		if i < 0 {
			// A section the file has no place for yet: a heading and its table go last.
			j := strings.Index(text, sectionsEnd)
			if j < 0 {
				t.Fatalf("%s has no %q line to add section %s before", referenceFile, sectionsEnd, s)
			}
			add := "## " + s + "\n\n" + start + "\n" + blockEnd + "\n\n"
			text = text[:j] + add + text[j:]
			i = strings.Index(text, start)
		}
		j := strings.Index(text[i:], blockEnd)
		if j < 0 {
			t.Fatalf("%s: %q is not closed by %q", referenceFile, start, blockEnd)
		}
		text = text[:i] + start + "\n" + tables[s] + text[i+j:]
	}
	// A block whose section the schema no longer has would describe keys Parse refuses.
	for _, m := range regexp.MustCompile(`<!-- keys (\S+) -->`).FindAllStringSubmatch(text, -1) {
		if !slices.Contains(order, m[1]) {
			t.Errorf("%s has a block for section %s, which the configuration no longer has", referenceFile, m[1])
		}
	}
	return text
}

// TestReferenceUpToDate: REFERENCE.md's key tables are exactly what the schema makes of them.
// Run with -update to rewrite them.
func TestReferenceUpToDate(t *testing.T) {
	old, err := os.ReadFile(referenceFile)
	if err != nil {
		t.Fatal(err)
	}
	keys := schemaKeys()
	text := regenerate(t, string(old), sections(keys), keyTables(t))
	if text == string(old) {
		return
	}
	if *update {
		if err := os.WriteFile(referenceFile, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	oldLines, newLines := strings.Split(string(old), "\n"), strings.Split(text, "\n")
	for i := range min(len(oldLines), len(newLines)) {
		if oldLines[i] != newLines[i] {
			t.Fatalf("%s is out of date at line %d (run go test ./internal/config -run TestReferenceUpToDate -update):\n have: %s\n want: %s",
				referenceFile, i+1, oldLines[i], newLines[i])
		}
	}
	t.Fatalf("%s is out of date: %d lines, want %d (run go test ./internal/config -run TestReferenceUpToDate -update)",
		referenceFile, len(oldLines), len(newLines))
}

// proseKeyRE finds a dotted key in backquotes: `monitor.user`, `endpoints[].mode`,
// `endpoints[0].tls`.
var proseKeyRE = regexp.MustCompile("`([a-z_]+(?:\\[[0-9]*\\])?(?:\\.[a-z_]+(?:\\[[0-9]*\\])?)+)`")

// TestDocsNameRealKeys: every dotted key the prose of the reference, the README and the
// deployment guide names in backquotes is one Parse accepts, so that a renamed key cannot
// linger in the text around the generated tables.
func TestDocsNameRealKeys(t *testing.T) {
	known := map[string]bool{}
	for _, k := range schemaKeys() {
		known[k.Path] = true
		for p := k.Path; strings.Contains(p, "."); p = p[:strings.LastIndex(p, ".")] {
			known[p] = true
		}
	}
	for _, file := range []string{referenceFile, "../../README.md", "../../DEPLOYING.md"} {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range proseKeyRE.FindAllStringSubmatch(string(data), -1) {
			key := regexp.MustCompile(`\[[0-9]*\]`).ReplaceAllString(m[1], "[]")
			top, _, _ := strings.Cut(key, ".")
			top = strings.TrimSuffix(top, "[]")
			if _, ok := fieldIndex(reflect.TypeFor[Config]())[top]; !ok {
				continue // not a configuration key (a file name, a Go identifier)
			}
			if !known[key] {
				t.Errorf("%s names `%s`, which is not a configuration key", file, m[1])
			}
		}
	}
}

// TestReadmeListsSections: the README's Configuration section links every section of the
// reference, and the reference has a heading for each (a section added to the structs shows up
// in REFERENCE.md at -update, and here until the README lists it).
func TestReadmeListsSections(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	ref, err := os.ReadFile(referenceFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sections(schemaKeys()) {
		anchor, heading := s, "\n## "+s+"\n"
		if s == "top" {
			anchor, heading = "top-level", "\n## Top level\n"
		}
		if !strings.Contains(string(ref), heading) {
			t.Errorf("%s has no heading %q", referenceFile, strings.TrimSpace(heading))
		}
		if !strings.Contains(string(readme), "REFERENCE.md#"+anchor+")") {
			t.Errorf("README.md's Configuration section does not link section %s (REFERENCE.md#%s)", s, anchor)
		}
	}
}
