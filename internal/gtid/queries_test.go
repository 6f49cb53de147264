package gtid

import (
	"reflect"
	"testing"
)

func TestOwnGTIDs(t *testing.T) {
	if got := OwnGTIDs(MariaDB, "2", "0-1-100, 0-2-3,1-2-7,1-12-4"); !reflect.DeepEqual(got, []string{"0-2-3", "1-2-7"}) {
		t.Errorf("MariaDB: %v", got)
	}
	if got := OwnGTIDs(MariaDB, "2", ""); got != nil {
		t.Errorf("empty position: %v", got)
	}
	uuid := "3E11FA47-71CA-11E1-9E33-C80AA9429562"
	pos := "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5,\n8a94f357-aab4-11df-86ab-c80aa9429562:1-100"
	if got := OwnGTIDs(MySQL, uuid, pos); !reflect.DeepEqual(got, []string{"3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5"}) {
		t.Errorf("MySQL: %v", got)
	}
}
