package config

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Several sluice nodes share one configuration through a store (etcd). Each node's own file
// is then its bootstrap: the store's address and the settings that belong to that node alone
// (LocalKeys); everything else (users, backends, monitor, endpoints, timeouts...) is the
// shared configuration, kept in the store as the text of a configuration file without the
// local keys. ParseShared reads the two as one configuration.

// LocalKeys are the top-level settings each sluice takes from its own file when the rest is in
// a store; the shared configuration may not hold them.
var LocalKeys = []string{"admin", "listen", "log", "name", "store", "zone"}

// Defaults of the store section.
const (
	DefaultStorePrefix      = "/sluice/default/"
	DefaultStoreDialTimeout = 2 * time.Second
)

// Store is where several sluice nodes keep their shared configuration.
type Store struct {
	// Etcd is the etcd cluster that holds the shared configuration and the list of live sluice
	// nodes; with endpoints set, the rest of this file is only this sluice's own settings
	// (name, zone, admin, log, listen, store) and, the first time, the shared configuration
	// to store (README: Running several sluice nodes).
	Etcd Etcd `yaml:"etcd"`
	// ClearSecrets lets the stored configuration hold passwords in clear (users[].password,
	// monitor.password). Without it such a configuration is refused: write password_hash, or
	// a ${NAME} reference that each sluice resolves from its own environment.
	ClearSecrets bool `yaml:"clear_secrets"`
	// CacheFile is where this sluice keeps a copy of the stored configuration it applied
	// (written within a second of each change, mode 0600): a sluice that starts while etcd is
	// unreachable starts from it (saying so) instead of waiting for etcd, and catches up when
	// etcd is back. Empty: no copy; such a start waits up to 30s for etcd, then fails.
	CacheFile string `yaml:"cache_file"`
}

// Etcd is how sluice reaches etcd.
type Etcd struct {
	// Endpoints are the etcd members' client addresses (host:port, or http:// or https://
	// URLs); empty: no store, the file is the whole configuration.
	Endpoints []string `yaml:"endpoints"`
	// Prefix is where this cluster's keys live: the configuration at PREFIX/config, the live
	// nodes under PREFIX/members/. Different clusters on one etcd use different prefixes. It
	// starts and ends with "/".
	Prefix string `yaml:"prefix"`
	// DialTimeout bounds a connection to etcd, and each of sluice's requests to it.
	DialTimeout Duration `yaml:"dial_timeout"`
	// Username is the etcd user sluice logs in as, when etcd has authentication on.
	Username string `yaml:"username"`
	// Password is the etcd user's password, usually `${ETCD_PASSWORD}`.
	Password string `yaml:"password"`
	// TLS is the client certificate and CA for an etcd that serves TLS.
	TLS EtcdTLS `yaml:"tls"`
}

// EtcdTLS is sluice's TLS to etcd.
type EtcdTLS struct {
	// CA is the PEM file of the CA that signed etcd's certificates; empty: the system roots.
	CA string `yaml:"ca"`
	// Cert is the PEM client certificate file sluice presents to etcd (with key).
	Cert string `yaml:"cert"`
	// Key is the PEM private key file of cert.
	Key string `yaml:"key"`
}

// Enabled reports whether the configuration is shared through a store.
func (s Store) Enabled() bool { return len(s.Etcd.Endpoints) > 0 }

// UsesTLS reports whether sluice talks to etcd over TLS.
func (e Etcd) UsesTLS() bool {
	if e.TLS.CA != "" || e.TLS.Cert != "" {
		return true
	}
	for _, ep := range e.Endpoints {
		if strings.HasPrefix(ep, "https://") {
			return true
		}
	}
	return false
}

// isLocal reports whether the top-level key of key path key is one of LocalKeys.
func isLocal(key string) bool {
	top := key
	if i := strings.IndexAny(top, ".["); i >= 0 {
		top = top[:i]
	}
	return slices.Contains(LocalKeys, top)
}

// ParseShared parses a sluice's own file (path, boot) with the shared configuration read from
// a store (named shared in errors, such as "etcd:/sluice/prod/config"): the local keys from
// the file, everything else from the shared text. Errors name the file or the store, as the
// key came from one or the other. The shared text may not hold local keys.
func ParseShared(path string, boot []byte, shared string, text []byte) (*Config, error) {
	broot, err := readYAML(path, boot)
	if err != nil {
		return nil, err
	}
	sroot, err := readYAML(shared, text)
	if err != nil {
		return nil, err
	}
	merged := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: 1}
	if broot != nil {
		if broot.Kind != yaml.MappingNode {
			return nil, &Error{File: path, Line: broot.Line, Msg: "the top level must be a mapping of settings"}
		}
		for i := 0; i+1 < len(broot.Content); i += 2 {
			if slices.Contains(LocalKeys, broot.Content[i].Value) {
				merged.Content = append(merged.Content, broot.Content[i], broot.Content[i+1])
			}
		}
	}
	var errs []*Error
	if sroot != nil {
		if sroot.Kind != yaml.MappingNode {
			return nil, &Error{File: shared, Line: sroot.Line, Msg: "the top level must be a mapping of settings"}
		}
		for i := 0; i+1 < len(sroot.Content); i += 2 {
			k := sroot.Content[i]
			if slices.Contains(LocalKeys, k.Value) {
				errs = append(errs, &Error{File: shared, Line: k.Line, Key: k.Value,
					Msg: "set in each sluice's own file, not in the shared configuration"})
				continue
			}
			merged.Content = append(merged.Content, k, sroot.Content[i+1])
		}
	}
	if len(errs) > 0 {
		return nil, joinErrors(errs)
	}
	c, err := decodeRoot(path, shared, merged, nil, false)
	if err != nil {
		return nil, err
	}
	c.Shared = shared
	return c, nil
}

// ParseLocal parses only the local keys (LocalKeys) of a sluice's own file: where the store
// is, before the shared configuration is read from it. The other keys are not read.
func ParseLocal(path string, data []byte) (*Config, error) {
	root, err := readYAML(path, data)
	if err != nil {
		return nil, err
	}
	if root != nil && root.Kind == yaml.MappingNode {
		local := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: root.Line}
		for i := 0; i+1 < len(root.Content); i += 2 {
			if slices.Contains(LocalKeys, root.Content[i].Value) {
				local.Content = append(local.Content, root.Content[i], root.Content[i+1])
			}
		}
		root = local
	}
	return decodeRoot(path, "", root, nil, true)
}

// validateLocal checks the local keys only.
func (c *Config) validateLocal() []*Error {
	k := &checker{c: c}
	k.admin()
	k.store()
	k.oneOf("log.format", c.Log.Format, LogFormatText, LogFormatJSON)
	k.oneOf("log.level", c.Log.Level, LogLevelDebug, LogLevelInfo, LogLevelWarn, LogLevelError)
	// admin.tls needs tls.cert, which the shared configuration gives: checked with it.
	return slices.DeleteFunc(k.errs, func(e *Error) bool { return e.Key == "admin.tls" })
}

// SharedPart is the text of a configuration file without its local keys (LocalKeys): what a
// store holds. ok is false when the file has no shared setting at all.
func SharedPart(path string, data []byte) (out []byte, ok bool, err error) {
	root, err := readYAML(path, data)
	if err != nil || root == nil {
		return nil, false, err
	}
	if root.Kind != yaml.MappingNode {
		return nil, false, &Error{File: path, Line: root.Line, Msg: "the top level must be a mapping of settings"}
	}
	keep := &yaml.Node{Kind: yaml.MappingNode, Tag: root.Tag, Style: root.Style}
	for i := 0; i+1 < len(root.Content); i += 2 {
		if !slices.Contains(LocalKeys, root.Content[i].Value) {
			keep.Content = append(keep.Content, root.Content[i], root.Content[i+1])
		}
	}
	if len(keep.Content) == 0 {
		return nil, false, nil
	}
	out, err = encodeYAML(keep)
	return out, err == nil, err
}

// ClearSecrets lists the passwords a configuration's text holds in clear (neither empty nor a
// ${NAME} reference): what a store may hold only with store.clear_secrets.
func ClearSecrets(path string, data []byte) ([]string, error) {
	root, err := readYAML(path, data)
	if err != nil || root == nil || root.Kind != yaml.MappingNode {
		return nil, err
	}
	clear := func(n *yaml.Node) bool {
		n = resolve(n)
		return n != nil && n.Kind == yaml.ScalarNode && n.Value != "" && !strings.Contains(n.Value, "${")
	}
	var out []string
	if m := valueOf(root, "monitor"); m != nil && m.Kind == yaml.MappingNode {
		if p := valueOf(m, "password"); p != nil && clear(p) {
			out = append(out, "monitor.password")
		}
	}
	if us := valueOf(root, "users"); us != nil && us.Kind == yaml.SequenceNode {
		for i, u := range us.Content {
			if u.Kind != yaml.MappingNode {
				continue
			}
			if p := valueOf(u, "password"); p != nil && clear(p) {
				name := fmt.Sprint(i)
				if n := valueOf(u, "name"); n != nil {
					name = n.Value
				}
				out = append(out, "users["+name+"].password")
			}
		}
	}
	return out, nil
}

// store checks the store section and the other settings that matter only with one.
func (k *checker) store() {
	c := k.c
	if c.Name != "" {
		if err := CheckName(c.Name); err != nil {
			k.errorf("name", "%v", err)
		}
	}
	for name, addr := range c.Listen {
		k.address(childKey("listen", name), addr, true)
	}
	e := c.Store.Etcd
	if len(e.Endpoints) == 0 {
		if k.c.given("store.etcd.prefix") || e.Username != "" || e.TLS != (EtcdTLS{}) {
			k.errorf("store.etcd.endpoints", "required with the other store.etcd settings")
		}
		return
	}
	for i, ep := range e.Endpoints {
		hp := strings.TrimPrefix(strings.TrimPrefix(ep, "http://"), "https://")
		k.address(indexKey("store.etcd.endpoints", i), hp, false)
	}
	if !strings.HasPrefix(e.Prefix, "/") || !strings.HasSuffix(e.Prefix, "/") || strings.Contains(e.Prefix, "//") {
		k.errorf("store.etcd.prefix", "invalid value %q (want a key prefix that starts and ends with /, such as /sluice/prod/)", e.Prefix)
	}
	k.duration("store.etcd.dial_timeout", e.DialTimeout, true)
	if (e.TLS.Cert == "") != (e.TLS.Key == "") {
		k.errorf("store.etcd.tls", "cert and key go together")
	}
	if e.Password != "" && e.Username == "" {
		k.errorf("store.etcd.password", "set without store.etcd.username")
	}
}
