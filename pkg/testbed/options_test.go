package testbed

import (
	"strings"
	"testing"
)

func TestTSDBOptionsDefaultsAndKeys(t *testing.T) {
	o, err := TSDBOptions{}.normalize()
	if err != nil || o != (TSDBOptions{Profile: "custom", GPUNaming: GPUNamingInferscope, Days: 8, GPUDays: 2}) {
		t.Errorf("defaults: %+v %v", o, err)
	}
	if o, _ := (TSDBOptions{Profile: "tgi"}).normalize(); o.Days != 2 || o.GPUDays != 2 {
		t.Errorf("tgi defaults: %+v", o)
	}
	if o, _ := (TSDBOptions{GPUNaming: GPUNamingNone}).normalize(); o.GPUDays != 0 {
		t.Errorf("no GPU naming keeps GPU days: %+v", o)
	}
	if o, _ := (TSDBOptions{Days: 1, GPUDays: 5}).normalize(); o.GPUDays != 1 {
		t.Errorf("GPU days beyond the history: %+v", o)
	}
	for _, bad := range []TSDBOptions{{Profile: "lmdeploy"}, {GPUNaming: "nvsmi"}, {Days: -1}, {Days: 61}, {GPUDays: -2}} {
		if _, err := bad.normalize(); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
	// Every warmed variant has a key of its own that names it.
	s := Default(DefaultEnd)
	seen := map[string]bool{}
	for _, v := range WarmVariants {
		o, err := v.normalize()
		if err != nil {
			t.Fatal(err)
		}
		k, err := tsdbKey(s, o, DefaultHistoryStep)
		if err != nil {
			t.Fatal(err)
		}
		if seen[k] || !strings.Contains(k, o.Profile+"-"+o.GPUNaming) {
			t.Errorf("key %s for %+v", k, o)
		}
		seen[k] = true
	}
	// The defaults spelt out are the same variant.
	a, _ := TSDBOptions{}.normalize()
	b, _ := TSDBOptions{Profile: "custom", GPUNaming: "inferscope", Days: 8, GPUDays: 2}.normalize()
	ka, _ := tsdbKey(s, a, DefaultHistoryStep)
	kb, _ := tsdbKey(s, b, DefaultHistoryStep)
	if ka != kb {
		t.Error("explicit defaults build another TSDB")
	}
}
