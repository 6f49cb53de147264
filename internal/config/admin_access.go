package config

import (
	"os"
	"reflect"

	"go.yaml.in/yaml/v3"
)

// AdminAccess is what a client of the admin API (sluice ctl) takes from a configuration
// file: where the API listens, its token, whether it is HTTPS, and the certificate it serves.
type AdminAccess struct {
	Admin Admin
	// Cert is tls.cert: the certificate an HTTPS admin listener serves, which a client may
	// trust.
	Cert string
}

// LoadAdminAccess reads the file at path for AdminAccess only. Nothing else in the file is
// decoded or validated: a client of the admin API must need neither the proxy's secrets (an
// unset ${NAME} in a user's password) nor a whole file while it is being edited, only a YAML
// file whose admin section and tls.cert are right. Their problems are reported as Parse
// reports them (file:line: key: message); defaults are not applied (an empty Admin.Listen is
// the file's silence, for the caller to default).
func LoadAdminAccess(path string) (*AdminAccess, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return parseAdminAccess(path, data, os.LookupEnv)
}

// parseAdminAccess is LoadAdminAccess on data, with the environment lookup injected.
func parseAdminAccess(path string, data []byte, lookup func(string) (string, bool)) (*AdminAccess, error) {
	root, err := readYAML(path, data)
	if err != nil {
		return nil, err // not YAML at all: nothing of it can be trusted
	}
	a := &AdminAccess{}
	if root = resolve(root); root == nil || isNull(root) {
		return a, nil
	}
	d := &decoder{
		file:   path,
		lookup: lookup,
		pos:    &positions{lines: map[string]int{}, nulls: map[string]bool{}, root: root.Line},
		failed: map[string]bool{},
	}
	if root.Kind != yaml.MappingNode {
		d.top(root, &Config{}) // its message for a top level that is not a mapping
		return nil, joinErrors(d.errs)
	}
	d.pairs(root, "", func(k *yaml.Node, name, path string, val *yaml.Node) {
		switch name {
		case "admin":
			d.pos.lines[path] = k.Line
			d.value(val, path, k.Line, reflect.ValueOf(&a.Admin).Elem())
		case "tls":
			// Only its cert; a tls that is not a mapping is serve's to report.
			if n := resolve(val); n != nil && n.Kind == yaml.MappingNode {
				d.pairs(n, path, func(k *yaml.Node, name, path string, val *yaml.Node) {
					if name == "cert" {
						d.value(val, path, k.Line, reflect.ValueOf(&a.Cert).Elem())
					}
				})
			}
		}
	})
	// pairs also checks the keys of the whole top level and of tls: keep only what concerns
	// the two settings read.
	var errs []*Error
	for _, e := range d.errs {
		if e.Key == "admin" || isInside(e.Key, "admin") || e.Key == "tls.cert" {
			errs = append(errs, e)
		}
	}
	if err := joinErrors(errs); err != nil {
		return nil, err
	}
	return a, nil
}
