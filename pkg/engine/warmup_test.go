package engine

import (
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/inferscope/inferscope/pkg/derive"
)

var nan = math.NaN()

func sameValues(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] && !(math.IsNaN(a[i]) && math.IsNaN(b[i])) {
			return false
		}
	}
	return true
}

// The sparse lifecycle events Prometheus sends become the dense signals derive.WarmupMask reads.
func TestSparseSignals(t *testing.T) {
	ts := []int64{0, 60, 120, 180, 240, 300}
	ready := readyFromNotReady(derive.Series{T: ts, V: []float64{nan, 0, 0, nan, nan, 0}})
	if want := []float64{nan, 0, 0, 1, nan, 0}; !sameValues(ready.V, want) {
		t.Errorf("ready %v, want %v", ready.V, want)
	}
	present := presenceFromAppearances(derive.Series{T: ts, V: []float64{1, nan, nan, 1, nan, nan}})
	if want := []float64{1, 1, nan, 1, 1, 1}; !sameValues(present.V, want) {
		t.Errorf("presence %v, want %v", present.V, want)
	}
	if got := risingEdges(derive.Series{T: ts, V: []float64{nan, 2, 1, nan, 3, 3}}); !reflect.DeepEqual(got, []int64{60, 240}) {
		t.Errorf("rising edges %v", got)
	}
	// The mask reaches one rate window (plus a step: here w = 150) past each warming point.
	m := widenMask(derive.Mask{0, derive.WarmRestart, 0, 0, 0, 0}, ts, 150)
	if want := (derive.Mask{0, derive.WarmRestart, derive.WarmRestart, derive.WarmRestart, 0, 0}); !reflect.DeepEqual(m, want) {
		t.Errorf("widened %v, want %v", m, want)
	}
	always := presenceFromAppearances(derive.Series{T: ts, V: []float64{nan, nan, nan, nan, nan, nan}})
	mask, err := derive.WarmupMask(ts, derive.InstanceSignals{Ready: ready, Presence: always}, 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if want := (derive.Mask{0, derive.WarmNotReady, derive.WarmNotReady, derive.WarmJustReady, derive.WarmJustReady, derive.WarmNotReady}); !reflect.DeepEqual(mask, want) {
		t.Errorf("ready mask %v, want %v", mask, want)
	}
	mask, err = derive.WarmupMask(ts, derive.InstanceSignals{Presence: present}, 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if want := (derive.Mask{0, 0, 0, derive.WarmFirstSeen, derive.WarmFirstSeen, 0}); !reflect.DeepEqual(mask, want) {
		t.Errorf("presence mask %v, want %v", mask, want)
	}
}
