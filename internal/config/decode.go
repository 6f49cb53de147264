package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"strconv"
	"strings"
	"unicode"

	"go.yaml.in/yaml/v3"
)

// positions records where keys were written. Key paths look like
// "endpoints[0].read_weights.replica1"; list items are recorded under their
// index ("users[1]") with the line of the item.
type positions struct {
	lines map[string]int  // key path -> line of the key (or list item)
	nulls map[string]bool // keys written without a value ("key:" or "key: ~")
	root  int             // line of the top-level mapping, the last resort
	// shared names the shared configuration the keys other than LocalKeys came from
	// (ParseShared); empty: every key came from the file.
	shared string
}

// fileOf is where key was written: file, or the shared configuration for a key not local.
func (p *positions) fileOf(key, file string) string {
	if p == nil || p.shared == "" || isLocal(key) {
		return file
	}
	return p.shared
}

// lineOf returns the line of key, or of its closest ancestor that was
// written, so that a problem with a missing key points at the block that
// should contain it. It returns 0 when p is nil (a Config built in code).
func (p *positions) lineOf(key string) int {
	if p == nil {
		return 0
	}
	for k := key; k != ""; k = parentKey(k) {
		if l, ok := p.lines[k]; ok {
			return l
		}
	}
	return p.root
}

// given reports whether key was written in the file, even without a value.
func (p *positions) given(key string) bool {
	if p == nil {
		return false
	}
	_, ok := p.lines[key]
	return ok
}

// parentKey strips the last ".name" or "[i]" from a key path.
func parentKey(key string) string {
	i := strings.LastIndexAny(key, ".[")
	if i < 0 {
		return ""
	}
	return key[:i]
}

func indexKey(list string, i int) string {
	return list + "[" + strconv.Itoa(i) + "]"
}

// childKey appends a mapping key to a key path. Keys that are not plain
// words (say a backend called "db.1", or a stray "a\nb") are quoted, so
// the path stays readable and an error stays on one line.
func childKey(parent, name string) string {
	if !plainName(name) {
		name = strconv.Quote(name)
	}
	if parent == "" {
		return name
	}
	return parent + "." + name
}

func plainName(name string) bool {
	if name == "" {
		return false
	}
	for _, r := range name {
		if r != '_' && r != '-' && !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			return false
		}
	}
	return true
}

// parse is Parse with the environment lookup injected, so tests and the
// fuzzer do not depend on the process environment.
func parse(path string, data []byte, lookup func(string) (string, bool)) (*Config, error) {
	root, err := readYAML(path, data)
	if err != nil {
		return nil, err
	}
	return decodeRoot(path, "", root, lookup, false)
}

// decodeRoot decodes, defaults and validates a configuration's top-level node (nil: empty).
// With shared set (ParseShared), the keys other than LocalKeys came from the shared
// configuration of that name, and their errors name it instead of path.
//
// local decodes and checks only the LocalKeys (ParseLocal).
func decodeRoot(path, shared string, root *yaml.Node, lookup func(string) (string, bool), local bool) (*Config, error) {
	if lookup == nil {
		lookup = os.LookupEnv
	}
	d := &decoder{
		file:   path,
		lookup: lookup,
		pos:    &positions{lines: map[string]int{}, nulls: map[string]bool{}, root: 1, shared: shared},
		failed: map[string]bool{},
	}
	c := &Config{Path: path, pos: d.pos}
	if root != nil {
		d.pos.root = root.Line
		d.top(root, c)
	}
	// Defaults go only where the file says nothing, so that an explicit
	// zero ("interval: 0s", `mode: ""`) reaches Validate and is reported
	// rather than silently replaced.
	c.applyDefaults(func(key string, _ bool) bool {
		return !d.pos.given(key) || d.pos.nulls[key]
	})
	// This sluice's own listen addresses (listen: {endpoint: address}) replace the endpoints'.
	for i, e := range c.Endpoints {
		if a, ok := c.Listen[e.Name]; ok {
			c.Endpoints[i].Listen = a
		}
	}
	errs := d.errs
	check := c.validate
	if local {
		check = c.validateLocal
	}
	for _, e := range check() {
		// A value that could not be decoded was left at its zero value;
		// complaining about that zero as well would only add noise.
		if !d.related(e.Key) {
			errs = append(errs, e)
		}
	}
	if err := joinErrors(errs); err != nil {
		return nil, err
	}
	return c, nil
}

// readYAML parses data into a node tree and returns the top-level node, or
// nil for an empty file.
func readYAML(path string, data []byte) (*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, syntaxError(path, err)
	}
	// A second document would be ignored by a plain decode; refuse it so
	// that an accidental "---" cannot hide half of the settings.
	var extra yaml.Node
	switch err := dec.Decode(&extra); {
	case errors.Is(err, io.EOF):
	case err != nil:
		return nil, syntaxError(path, err)
	default:
		return nil, &Error{File: path, Line: extra.Line, Msg: "only one YAML document is allowed"}
	}
	if len(doc.Content) == 0 {
		return nil, nil
	}
	return doc.Content[0], nil
}

// syntaxError turns yaml.v3's "yaml: line N: msg" into an *Error so syntax
// errors are formatted like every other problem.
func syntaxError(path string, err error) *Error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line := 0
	if rest, ok := strings.CutPrefix(msg, "line "); ok {
		if i := strings.Index(rest, ": "); i > 0 {
			if n, err := strconv.Atoi(rest[:i]); err == nil {
				line, msg = n, rest[i+2:]
			}
		}
	}
	return &Error{File: path, Line: line, Msg: "invalid YAML: " + msg}
}

// decoder walks the node tree into the config structs itself instead of
// using yaml.Node.Decode: that way every unknown key, type mismatch and
// ${NAME} problem is reported with its full key path, and decoding goes on
// after the first problem so that all of them are reported at once.
type decoder struct {
	file   string
	lookup func(string) (string, bool)
	pos    *positions
	errs   []*Error
	failed map[string]bool // keys whose value could not be decoded
}

// errorf records a problem.
func (d *decoder) errorf(line int, key, format string, args ...any) {
	d.errs = append(d.errs, &Error{File: d.pos.fileOf(key, d.file), Line: line, Key: key, Msg: fmt.Sprintf(format, args...)})
}

// fail records a problem with the value of key, which is then left at its
// zero value.
func (d *decoder) fail(line int, key, format string, args ...any) {
	d.errorf(line, key, format, args...)
	d.failed[key] = true
}

// related reports whether key is, contains or lies inside a key whose value
// failed to decode.
func (d *decoder) related(key string) bool {
	for f := range d.failed {
		if f == "" || key == "" || f == key || isInside(key, f) || isInside(f, key) {
			return true
		}
	}
	return false
}

func isInside(key, parent string) bool {
	return strings.HasPrefix(key, parent) && len(key) > len(parent) &&
		(key[len(parent)] == '.' || key[len(parent)] == '[')
}

var durationType = reflect.TypeFor[Duration]()

func (d *decoder) top(n *yaml.Node, c *Config) {
	n = resolve(n)
	if isNull(n) {
		return
	}
	if n.Kind != yaml.MappingNode {
		d.fail(n.Line, "", "the top level must be a mapping with keys such as users, backends and endpoints, not %s", describe(n))
		return
	}
	d.value(n, "", n.Line, reflect.ValueOf(c).Elem())
}

// value decodes n, found under key on line, into v.
func (d *decoder) value(n *yaml.Node, key string, line int, v reflect.Value) {
	n = resolve(n)
	if isNull(n) {
		// "key:" with nothing after it means the same as leaving the key
		// out, which is what people expect of YAML.
		d.pos.nulls[key] = true
		return
	}
	if v.Type() == durationType {
		s, ok := d.scalar(n, key, line, "a duration")
		if !ok {
			return
		}
		dur, err := parseDuration(s)
		if err != nil {
			d.fail(line, key, "invalid value %q (%v)", s, err)
			return
		}
		v.Set(reflect.ValueOf(Duration{dur}))
		return
	}
	switch v.Kind() {
	case reflect.Struct:
		d.structure(n, key, line, v)
	case reflect.Slice:
		d.list(n, key, line, v)
	case reflect.Map:
		d.dict(n, key, line, v)
	case reflect.String:
		if s, ok := d.scalar(n, key, line, "a string"); ok {
			v.SetString(s)
		}
	case reflect.Bool:
		s, ok := d.scalar(n, key, line, "true or false")
		if !ok {
			return
		}
		switch s {
		case "true":
			v.SetBool(true)
		case "false":
			v.SetBool(false)
		default:
			d.fail(line, key, "invalid value %q (want true or false)", s)
		}
	case reflect.Int:
		s, ok := d.scalar(n, key, line, "an integer")
		if !ok {
			return
		}
		i, err := strconv.Atoi(s)
		if err != nil {
			d.fail(line, key, "invalid value %q (want an integer)", s)
			return
		}
		v.SetInt(int64(i))
	default:
		// Only reachable if a field of an unsupported type is added to
		// the config structs, which a test would catch at once.
		panic("config: unsupported field type " + v.Type().String())
	}
}

// scalar returns the ${NAME}-expanded text of a scalar node. Only the kind
// of a wrong node is reported, never its text: it may be a password.
func (d *decoder) scalar(n *yaml.Node, key string, line int, want string) (string, bool) {
	if n.Kind != yaml.ScalarNode {
		d.fail(line, key, "expected %s, got %s", want, describe(n))
		return "", false
	}
	if !strings.Contains(n.Value, "$") {
		return n.Value, true
	}
	s, missing, err := expand(n.Value, d.lookup)
	if err != nil {
		d.fail(line, key, "%v", err)
		return "", false
	}
	for _, name := range missing {
		d.fail(line, key, "environment variable %s is not set", name)
	}
	return s, len(missing) == 0
}

// fieldIndex maps the yaml tag names of t's exported fields to their index.
func fieldIndex(t reflect.Type) map[string]int {
	m := make(map[string]int, t.NumField())
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "" || name == "-" {
			continue
		}
		m[name] = i
	}
	return m
}

func (d *decoder) structure(n *yaml.Node, key string, line int, v reflect.Value) {
	if n.Kind != yaml.MappingNode {
		d.fail(line, key, "expected a mapping (key: value lines), got %s", describe(n))
		return
	}
	fields := fieldIndex(v.Type())
	d.pairs(n, key, func(k *yaml.Node, name, path string, val *yaml.Node) {
		i, ok := fields[name]
		if !ok {
			d.errorf(k.Line, path, "unknown key")
			return
		}
		d.pos.lines[path] = k.Line
		d.value(val, path, k.Line, v.Field(i))
	})
}

func (d *decoder) dict(n *yaml.Node, key string, line int, v reflect.Value) {
	if n.Kind != yaml.MappingNode {
		d.fail(line, key, "expected a mapping (name: value lines), got %s", describe(n))
		return
	}
	m := reflect.MakeMapWithSize(v.Type(), len(n.Content)/2)
	d.pairs(n, key, func(k *yaml.Node, name, path string, val *yaml.Node) {
		d.pos.lines[path] = k.Line
		elem := reflect.New(v.Type().Elem()).Elem()
		d.value(val, path, k.Line, elem)
		m.SetMapIndex(reflect.ValueOf(name), elem)
	})
	v.Set(m)
}

// pairs calls fn for each key of mapping n, after rejecting keys that are
// not plain scalars, duplicate keys and merge keys.
func (d *decoder) pairs(n *yaml.Node, key string, fn func(k *yaml.Node, name, path string, val *yaml.Node)) {
	seen := make(map[string]int, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := resolve(n.Content[i]), n.Content[i+1]
		if k == nil || k.Kind != yaml.ScalarNode {
			d.errorf(n.Content[i].Line, key, "keys must be plain names, not %s", describe(k))
			continue
		}
		path := childKey(key, k.Value)
		if k.ShortTag() == "!!merge" {
			// Merged values would carry the anchor's line numbers and
			// make error messages point at the wrong block.
			d.errorf(k.Line, key, "merge keys (<<) are not supported")
			continue
		}
		// yaml.v3 keeps duplicates in the node tree; the later one would
		// silently win, so an accidental copy-paste must be an error.
		if first, dup := seen[k.Value]; dup {
			d.errorf(k.Line, path, "duplicate key (first set on line %d)", first)
			continue
		}
		seen[k.Value] = k.Line
		fn(k, k.Value, path, val)
	}
}

func (d *decoder) list(n *yaml.Node, key string, line int, v reflect.Value) {
	if n.Kind != yaml.SequenceNode {
		d.fail(line, key, "expected a list (\"- \" items), got %s", describe(n))
		return
	}
	s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
	for i, item := range n.Content {
		path := indexKey(key, i)
		d.pos.lines[path] = item.Line
		d.value(item, path, item.Line, s.Index(i))
	}
	v.Set(s)
}

// resolve follows aliases (*name) to the anchored node. The bound only
// guards against a malformed tree; yaml.v3 never chains aliases.
func resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 8; i++ {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	return n == nil || n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

func describe(n *yaml.Node) string {
	if n == nil {
		return "nothing"
	}
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return "a single value"
	case yaml.AliasNode:
		return "an alias"
	case yaml.DocumentNode:
		return "a document"
	}
	return "an unknown node"
}

// expand replaces ${NAME} with the value of the environment variable NAME
// and $$ with $; any other $ is kept. It returns the names of unset
// variables separately so each can be reported. Expansion is a single
// pass: a variable's value is never expanded again, so a password that
// happens to contain "${" is used verbatim.
func expand(s string, lookup func(string) (string, bool)) (string, []string, error) {
	var b strings.Builder
	var missing []string
	for i := 0; i < len(s); {
		switch {
		case s[i] != '$':
			b.WriteByte(s[i])
			i++
		case strings.HasPrefix(s[i:], "$$"):
			b.WriteByte('$')
			i += 2
		case strings.HasPrefix(s[i:], "${"):
			end := strings.IndexByte(s[i+2:], '}')
			// The reference itself is not quoted in the message: the
			// value may be a password that merely contains "${".
			if end < 0 {
				return "", nil, errors.New(`unterminated "${" (write "$$" for a literal "$")`)
			}
			name := s[i+2 : i+2+end]
			if !validEnvName(name) {
				return "", nil, errors.New(`invalid "${...}": the name must be letters, digits and _, not starting with a digit (write "$$" for a literal "$")`)
			}
			if v, ok := lookup(name); ok {
				b.WriteString(v)
			} else {
				missing = append(missing, name)
			}
			i += 2 + end + 1
		default:
			b.WriteByte('$')
			i++
		}
	}
	return b.String(), missing, nil
}

func validEnvName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c == '_', 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case '0' <= c && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}
