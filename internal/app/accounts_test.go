package app

import (
	"encoding/json"
	"testing"
)

// TestAccountRows: the primary's rows as sluice reads them (mariadb-facts.md's recorded values).
func TestAccountRows(t *testing.T) {
	native, err := account("u", "%", "mysql_native_password", "*D821809F681A40A6E379B50D0463EFAE20BDD122", "false", "")
	if err != nil || native.Plugin != "mysql_native_password" || native.NoPassword || native.Locked || native.Hash[0] != 0xD8 {
		t.Errorf("native: %+v %v", native, err)
	}
	empty, err := account("u", "%", "mysql_native_password", "", "true", "")
	if err != nil || !empty.NoPassword || !empty.Locked {
		t.Errorf("no password, locked: %+v %v", empty, err)
	}
	// VIA ed25519 ... OR mysql_native_password: the top level holds the last alternative.
	or, err := account("u", "%", "ed25519", "vRq+ROSzhW4MwhdoPvlkL1fHkT0w6ZDDbTpVQwSNQ90", "false",
		`[{"plugin": "ed25519", "authentication_string": "vRq+ROSzhW4MwhdoPvlkL1fHkT0w6ZDDbTpVQwSNQ90"}, {"plugin": "mysql_native_password", "authentication_string": "*B27918D2C1D5C9C5B3B8A1A1E5F4D2C1B0A9F8E7"}]`)
	if err != nil || or.Plugin != "mysql_native_password" || or.Hash[0] != 0xB2 {
		t.Errorf("ed25519 OR native: %+v %v", or, err)
	}
	ed, err := account("u", "%", "ed25519", "vRq+ROSzhW4MwhdoPvlkL1fHkT0w6ZDDbTpVQwSNQ90", "false", "")
	if err != nil || ed.Plugin != "ed25519" {
		t.Errorf("ed25519: %+v %v", ed, err)
	}
	mysqlLocked, _ := account("u", "%", "mysql_native_password", "", "Y", "")
	if !mysqlLocked.Locked {
		t.Error("MySQL's account_locked Y")
	}
	if _, err := account("u", "%", "mysql_native_password", "*XYZ", "false", ""); err == nil {
		t.Error("a bad hash was taken")
	}
}

// TestCIDRHosts: MySQL reads IP/prefix-length account hosts from 8.0.23 on.
func TestCIDRHosts(t *testing.T) {
	for v, want := range map[string]bool{
		"8.0.22": false, "8.0.23": true, "8.0.40-log": true, "8.4.3": true, "9.1.0": true, "5.7.44": false, "junk": false,
	} {
		if got := cidrHosts(v); got != want {
			t.Errorf("cidrHosts(%q) = %v, want %v", v, got, want)
		}
	}
}

// TestNewNameRefusesControlCharacters: a node or endpoint created through the API may not be
// named with control characters (sluice ctl, logs and metric labels print names).
func TestNewNameRefusesControlCharacters(t *testing.T) {
	for raw, ok := range map[string]bool{
		`"replica3"`: true, `"r\u001b[2J"`: false, `"r\nup"`: false, `"r\u202e"`: false, `"réplica"`: true,
	} {
		_, err := newName(map[string]json.RawMessage{"name": json.RawMessage(raw)}, "node")
		if (err == nil) != ok {
			t.Errorf("name %s: %v, want ok %v", raw, err, ok)
		}
	}
}
