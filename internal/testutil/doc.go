// Package testutil holds helpers for sluice's tests. The cluster helper gives an integration
// test package one real sandbox cluster (primary + replicas, free ports, a temp directory)
// for its whole run:
//
//	func TestMain(m *testing.M) { os.Exit(testutil.Main(m, sandbox.Options{})) }
//
//	func TestSomething(t *testing.T) {
//		c := testutil.Cluster(t) // skips when no server is installed, unless CI=true
//		...
//	}
//
// One cluster per package, not per test: bringing a cluster up costs seconds, and tests that
// change it (Stop, Pause, Lag) are expected to put it back.
package testutil
