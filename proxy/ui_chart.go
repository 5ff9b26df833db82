package proxy

import (
	"embed"
	"fmt"
	"html"
	"regexp"
	"strings"
	"sync"

	"github.com/mcpkeep/mcpkeep/fsm"
)

// uiFiles are the live page's assets (docs/design.md §28): the page
// template, its style and script, and the lifecycle chart, which `make
// diagram` renders from fsm.Table into ui/lifecycle.svg (the drift test
// fails when it is stale).
//
//go:embed ui
var uiFiles embed.FS

var (
	svgNode  = regexp.MustCompile(`<g id="(node\d+)" class="node">\n<title>([^<]*)</title>`)
	svgEdge  = regexp.MustCompile(`(?s)<g id="edge\d+" class="edge">\n<title>([^<]*)</title>.*?</g>`)
	svgText  = regexp.MustCompile(`<text [^>]*>([^<]*)</text>`)
	svgStart = regexp.MustCompile(`(?s)^.*?<svg width="[^"]*" height="[^"]*"`)
)

// chartSVG is the embedded chart made fit to inline in the page: no XML
// prolog, sized by CSS, the background transparent, each state's node
// tagged data-state and each transition's edge data-from, data-to and
// data-event, so the page lights them by name. It works on whatever
// fsm.Table declares: a new row or state needs no change here.
var chartSVG = sync.OnceValue(func() string {
	b, err := uiFiles.ReadFile("ui/lifecycle.svg")
	if err != nil {
		panic(err) // embedded: cannot happen
	}
	s := svgStart.ReplaceAllString(string(b), `<svg class="chart" role="img" aria-label="The connection lifecycle, declared in fsm.Table"`)
	s = strings.Replace(s, `<polygon fill="white" stroke="none"`, `<polygon fill="none" stroke="none"`, 1)
	s = svgNode.ReplaceAllStringFunc(s, func(m string) string {
		sm := svgNode.FindStringSubmatch(m)
		name := html.UnescapeString(sm[2])
		return fmt.Sprintf(`<g id="%s" class="node" data-state="%s">`+"\n<title>%s</title>", sm[1], html.EscapeString(name), sm[2])
	})
	return svgEdge.ReplaceAllStringFunc(s, func(m string) string {
		sm := svgEdge.FindStringSubmatch(m)
		from, to, _ := strings.Cut(html.UnescapeString(sm[1]), "->")
		event := ""
		if t := svgText.FindStringSubmatch(m); t != nil {
			event, _, _ = strings.Cut(html.UnescapeString(t[1]), " ")
		}
		attrs := fmt.Sprintf(` data-from="%s" data-to="%s" data-event="%s"`,
			html.EscapeString(from), html.EscapeString(to), html.EscapeString(event))
		return strings.Replace(m, `class="edge"`, `class="edge"`+attrs, 1)
	})
})

// litChart is the chart with the given states lit: what a page without
// JavaScript shows.
func litChart(lit map[string]bool) string {
	s := chartSVG()
	for name := range lit {
		q := html.EscapeString(name)
		s = strings.Replace(s, `class="node" data-state="`+q+`"`, `class="node lit" data-state="`+q+`"`, 1)
	}
	return s
}

// stateCSS gives each declared state its colour (fsm.State.Color) as the
// custom property --sc of whatever names it with data-state: the chart's
// nodes and the page's badges use the diagram's colours.
var stateCSS = sync.OnceValue(func() string {
	var b strings.Builder
	for _, st := range fsm.States {
		fmt.Fprintf(&b, "[data-state=%q]{--sc:%s}\n", st.String(), st.Color())
	}
	return b.String()
})
