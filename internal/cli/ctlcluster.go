package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sluicedb/sluice/internal/admin"
	"github.com/sluicedb/sluice/internal/config"
)

// The commands of a cluster of sluice nodes sharing their configuration through a store
// (etcd): cluster shows the store and the live nodes, export the configuration in force,
// import replaces it.

func (c *ctl) cluster() error {
	var info admin.ClusterInfo
	return c.do("GET", "/v1/cluster", nil, &info, func(any) { c.printCluster(info, time.Now()) })
}

// printCluster writes the store's line(s), then one row per live sluice node; now is the
// time the uptimes are counted to.
func (c *ctl) printCluster(info admin.ClusterInfo, now time.Time) {
	s := info.Store
	c.printStore(s, now)
	if !s.Connected && !info.MembersAsOf.IsZero() {
		fmt.Fprintf(c.stdout, "the nodes as the store listed them at %s\n", when(info.MembersAsOf, now))
	}
	if s.NameTakenBy != "" {
		fmt.Fprintf(c.stdout, "this sluice (%s) is not listed: another live sluice has its name (%s); give each sluice its own name (name: in its file)\n", orWord(s.Name, "?"), s.NameTakenBy)
	} else if !slices.ContainsFunc(info.Members, func(m admin.Member) bool { return m.Self }) {
		fmt.Fprintf(c.stdout, "this sluice (%s) is not listed: not registered yet, or the store is not reachable\n", orWord(s.Name, "?"))
	}
	fmt.Fprintln(c.stdout)
	w := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "NAME\tZONE\tADMIN\tENDPOINTS\tVERSION\tAPPLIED REV\tSTARTED")
	for _, m := range info.Members {
		name := m.Name
		if m.Self {
			name += " (this)"
		}
		applied := strconv.FormatInt(m.Applied, 10)
		if m.Applied < s.Revision {
			applied += " (behind)"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", name, orDash(m.Zone), orDash(m.Admin), addrPairs(m.Endpoints),
			orDash(m.Version), applied, when(m.Started, now))
	}
	w.Flush()
	for _, m := range info.Members {
		if m.Refused != "" && !m.Self {
			fmt.Fprintf(c.stdout, "%s REFUSED revision %d: %s\n", m.Name, m.RefusedRevision, m.Refused)
		}
	}
}

// printStore writes the lines of this sluice's link to the store: where it is and whether it
// answers, the revisions stored and applied, a refused one, the settings waiting for a restart.
func (c *ctl) printStore(s admin.StoreState, now time.Time) {
	link := "connected"
	if !s.Connected {
		link = "NOT CONNECTED since " + when(s.Since, now)
		if s.LastError != "" {
			link += " (" + s.LastError + ")"
		}
	}
	fmt.Fprintf(c.stdout, "store %s %s prefix %s: %s\n", orWord(s.Kind, "etcd"), strings.Join(s.Endpoints, ","), s.Prefix, link)
	fmt.Fprintf(c.stdout, "configuration: revision %d stored, %d applied here", s.Revision, s.Applied)
	if s.Applied < s.Revision {
		fmt.Fprint(c.stdout, " (BEHIND)")
	}
	fmt.Fprintln(c.stdout)
	if s.Refused != "" {
		fmt.Fprintf(c.stdout, "REFUSED revision %d: %s\n", s.RefusedRevision, s.Refused)
	}
	if len(s.PendingRestart) > 0 {
		fmt.Fprintf(c.stdout, "stored changes in force here only after a restart: %s\n", strings.Join(s.PendingRestart, ", "))
	}
}

// when words t for a table: its UTC time to the second and how long ago it was.
func when(t time.Time, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02 15:04:05") + " (" + now.Sub(t).Round(time.Second).String() + " ago)"
}

// addrPairs prints endpoint addresses as name=address,... in name order.
func addrPairs(m map[string]string) string {
	parts := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, k+"="+m[k])
	}
	return orDash(strings.Join(parts, ","))
}

// exportHeader is the first line export writes; import recognises it (and the revision it
// names) and does not store it.
var exportHeader = regexp.MustCompile(`\A# sluice configuration, (?:revision (\d+) of |from )\S*[^\n]*\n`)

// export writes the configuration in force (the stored one, with a store), first line a
// comment saying which and at what revision, to file (stdout when empty).
func (c *ctl) export(file string) error {
	data, err := c.request("GET", "/v1/config", nil)
	if err != nil {
		return err
	}
	var out []byte
	if c.json {
		out = data
	} else {
		var sc admin.SharedConfig
		if err := json.Unmarshal(data, &sc); err != nil {
			return fmt.Errorf("the admin API's answer: %w", err)
		}
		head := "# sluice configuration, from " + sc.Source + "\n"
		if strings.HasPrefix(sc.Source, "etcd:") {
			head = fmt.Sprintf("# sluice configuration, revision %d of %s\n", sc.Revision, sc.Source)
		}
		text := exportHeader.ReplaceAllString(sc.Config, "") // an older export's line, stored with it
		if text != "" && !strings.HasSuffix(text, "\n") {
			text += "\n"
		}
		out = append([]byte(head), text...)
	}
	if file == "" {
		_, err := c.stdout.Write(out)
		return err
	}
	if err := os.WriteFile(file, out, 0o600); err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "written to %s\n", file)
	return nil
}

// importConfig replaces the shared configuration with file's shared settings (its local keys,
// such as a whole sluice.yaml's store and admin, are left out), if the store is still at
// revision rev: the flag's, else the one named by the line export wrote at the file's top,
// else whatever this sluice has in force.
func (c *ctl) importConfig(file, revFlag string) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	var rev int64
	if m := exportHeader.FindSubmatch(data); m != nil {
		if len(m[1]) > 0 {
			rev, _ = strconv.ParseInt(string(m[1]), 10, 64)
		}
		data = data[len(m[0]):]
	}
	if revFlag != "" {
		if rev, err = strconv.ParseInt(revFlag, 10, 64); err != nil || rev < 0 {
			return usagef("--revision %q: want a revision (a number; 0: the one in force)", revFlag)
		}
	}
	text, ok, err := config.SharedPart(file, data)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%s holds no shared setting (users, backends, endpoints...), only a sluice's own (%s): nothing to import",
			file, strings.Join(config.LocalKeys, ", "))
	}
	var ch admin.Change
	err = c.do("PUT", "/v1/config", map[string]any{"config": string(text), "revision": rev}, &ch, func(any) {
		c.printChange(ch, true)
		fmt.Fprintln(c.stdout, "stored: the other sluice nodes apply it as they see it")
	})
	var he *httpError
	if errors.As(err, &he) && he.status == http.StatusConflict && strings.Contains(he.msg, "revision") {
		return fmt.Errorf("%w\nnothing was imported: export the configuration again (sluice ctl export), make the change there, and import that", err)
	}
	return err
}
