package servertest

import (
	"strconv"
	"testing"

	"github.com/sluicedb/sluice/internal/classify"
)

// TestSpaceCharsets checks classify.SpaceCharset and classify.SpaceCollation against the live
// server: for every client character set, the bytes from 0x80 up that its lexer reads as
// whitespace (SELECT 1 INTO<byte> @x runs) are only 0xA0 and 0xFF (what DependsSpace marks),
// SpaceCharset names exactly the sets that have one, and SpaceCollation says so of every
// collation id a handshake can carry.
func TestSpaceCharsets(t *testing.T) {
	srv := connect(t)
	rows, err := srv.bc.Query("SELECT ID, CHARACTER_SET_NAME FROM information_schema.COLLATIONS WHERE ID < 256")
	if err != nil {
		t.Fatal(err)
	}
	byCharset := map[string][]uint8{}
	for _, r := range rows.Values {
		id, err := strconv.Atoi(r[0].S)
		if err != nil {
			t.Fatal(err)
		}
		byCharset[r[1].S] = append(byCharset[r[1].S], uint8(id))
	}
	checked := 0
	for cs, ids := range byCharset {
		if err := srv.bc.Exec("SET NAMES " + cs); err != nil {
			continue // not a client character set (ucs2, utf16, utf32)
		}
		checked++
		space := false
		for b := 0x80; b <= 0xff; b++ {
			if srv.bc.Exec("SELECT 1 INTO"+string([]byte{byte(b)})+" @x") != nil {
				continue
			}
			if b != 0xa0 && b != 0xff {
				t.Errorf("%s reads byte %#x as whitespace: DependsSpace does not mark it", cs, b)
			}
			space = true
		}
		if classify.SpaceCharset([]byte(cs)) != space {
			t.Errorf("%s: SpaceCharset %v, the server reads whitespace from 0x80 up: %v", cs, !space, space)
		}
		for _, id := range ids {
			if classify.SpaceCollation(id) != space {
				t.Errorf("collation %d (%s): SpaceCollation %v, want %v", id, cs, !space, space)
			}
		}
	}
	srv.exec(t, "SET NAMES utf8mb4")
	if checked < 20 {
		t.Fatalf("only %d client character sets checked", checked)
	}
}
