package engine

import (
	"fmt"
	"testing"
)

func TestPromAnnotationsFoldInfos(t *testing.T) {
	x := &Exec{noticed: map[string]bool{}}
	x.promAnnotations("Prometheus: ", []string{"PromQL info: a (1:2)", "too many samples"}, []string{"PromQL info: a (1:30)"})
	x.promAnnotations("Prometheus: ", nil, []string{"PromQL info: b (2:1)", "PromQL info: a (9:9)"})
	x.promAnnotations("Prometheus: ", []string{"too many samples"}, nil)
	want := []Notice{
		{Severity: Info, Text: "Prometheus: PromQL info: a; b"},
		{Severity: Warning, Text: "Prometheus: too many samples"},
	}
	got := x.res.Notices
	if len(got) != 2 || !(got[0] == want[0] && got[1] == want[1] || got[0] == want[1] && got[1] == want[0]) {
		t.Fatalf("notices %+v, want %+v", got, want)
	}

	// Many distinct messages: the notice lists a few and counts the rest.
	x = &Exec{noticed: map[string]bool{}}
	var infos []string
	for i := range maxPromInfos + 3 {
		infos = append(infos, fmt.Sprintf("PromQL info: m%d (1:%d)", i, i))
	}
	x.promAnnotations("", nil, infos)
	if len(x.res.Notices) != 1 || x.res.Notices[0].Text != "PromQL info: m0; m1; m2; m3; m4; and 3 more" {
		t.Errorf("notices %+v", x.res.Notices)
	}
}
