package main

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
	"strings"
)

// The plot is drawn with the standard library alone (no plotting module
// for one picture): two panels, children per second and child latency by
// worker count, labelled in a 5x7 pixel font.

var (
	white  = color.RGBA{255, 255, 255, 255}
	black  = color.RGBA{30, 30, 30, 255}
	grey   = color.RGBA{200, 200, 200, 255}
	blue   = color.RGBA{31, 119, 180, 255}
	orange = color.RGBA{255, 127, 14, 255}
	green  = color.RGBA{44, 160, 44, 255}
)

// series is one line of a panel.
type series struct {
	name   string
	c      color.RGBA
	xs, ys []float64
	dashed bool
}

func (r report) plot() ([]byte, error) {
	var xs, rate, p50, p99 []float64
	var local row
	for _, x := range r.rows {
		if x.workers == 0 {
			local = x
			continue
		}
		xs = append(xs, float64(x.workers))
		rate = append(rate, x.perSec)
		p50 = append(p50, float64(x.loadP50.Microseconds())/1000)
		p99 = append(p99, float64(x.loadP99.Microseconds())/1000)
	}
	if len(xs) == 0 {
		return nil, fmt.Errorf("no worker measurements to plot")
	}
	var linear []float64
	for _, x := range xs {
		linear = append(linear, rate[0]*x/xs[0])
	}
	flat := func(v float64) []float64 {
		out := make([]float64, len(xs))
		for i := range out {
			out[i] = v
		}
		return out
	}
	img := image.NewRGBA(image.Rect(0, 0, 1100, 500))
	fill(img, img.Bounds(), white)
	text(img, 20, 12, 2, black, "jazz worker pools: "+fmt.Sprintf("%d runs x %d sub-agents, model %s, capacity %d per worker", r.o.runs, r.o.children, r.o.latency, r.o.capacity))
	panel(img, image.Rect(70, 60, 520, 400), "children per second", xs, []series{
		{name: "on workers", c: blue, xs: xs, ys: rate},
		{name: "linear from 1 worker", c: grey, xs: xs, ys: linear, dashed: true},
		{name: "local children", c: green, xs: xs, ys: flat(local.perSec), dashed: true},
	})
	panel(img, image.Rect(620, 60, 1070, 400), "child latency ms (loaded)", xs, []series{
		{name: "p50", c: blue, xs: xs, ys: p50},
		{name: "p99", c: orange, xs: xs, ys: p99},
		{name: "local p50", c: green, xs: xs, ys: flat(float64(local.loadP50.Microseconds()) / 1000), dashed: true},
	})
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// panel draws axes from 0, ticks at the worker counts, and the series.
func panel(img *image.RGBA, r image.Rectangle, title string, ticks []float64, ss []series) {
	maxY := 0.0
	for _, s := range ss {
		for _, y := range s.ys {
			maxY = math.Max(maxY, y)
		}
	}
	step := niceStep(maxY / 5)
	maxY = math.Ceil(maxY/step) * step
	maxX := ticks[len(ticks)-1]
	px := func(x float64) int { return r.Min.X + int(x/maxX*float64(r.Dx())) }
	py := func(y float64) int { return r.Max.Y - int(y/maxY*float64(r.Dy())) }
	text(img, r.Min.X, r.Min.Y-22, 2, black, title)
	for y := 0.0; y <= maxY+step/2; y += step {
		line(img, r.Min.X, py(y), r.Max.X, py(y), grey, false)
		label := fmt.Sprintf("%g", y)
		text(img, r.Min.X-8-len(label)*6, py(y)-3, 1, black, label)
	}
	line(img, r.Min.X, r.Min.Y, r.Min.X, r.Max.Y, black, false)
	line(img, r.Min.X, r.Max.Y, r.Max.X, r.Max.Y, black, false)
	for _, x := range ticks {
		line(img, px(x), r.Max.Y, px(x), r.Max.Y+5, black, false)
		label := fmt.Sprintf("%g", x)
		text(img, px(x)-len(label)*3, r.Max.Y+9, 1, black, label)
	}
	text(img, r.Min.X+r.Dx()/2-60, r.Max.Y+22, 1, black, "worker processes")
	for i, s := range ss {
		for j := 1; j < len(s.xs); j++ {
			for d := -1; d <= 1; d++ {
				line(img, px(s.xs[j-1]), py(s.ys[j-1])+d, px(s.xs[j]), py(s.ys[j])+d, s.c, s.dashed)
			}
		}
		if !s.dashed {
			for j := range s.xs {
				fill(img, image.Rect(px(s.xs[j])-3, py(s.ys[j])-3, px(s.xs[j])+4, py(s.ys[j])+4), s.c)
			}
		}
		ly := r.Max.Y + 40 + i*12
		line(img, r.Min.X, ly+3, r.Min.X+20, ly+3, s.c, s.dashed)
		text(img, r.Min.X+26, ly, 1, black, s.name)
	}
}

// niceStep rounds a raw step up to 1, 2 or 5 times a power of ten.
func niceStep(raw float64) float64 {
	if raw <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= raw {
			return m * p
		}
	}
	return 10 * p
}

func fill(img *image.RGBA, r image.Rectangle, c color.RGBA) {
	r = r.Intersect(img.Bounds())
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			img.SetRGBA(x, y, c)
		}
	}
}

// line is Bresenham's, dashed in runs of 6 pixels when asked.
func line(img *image.RGBA, x0, y0, x1, y1 int, c color.RGBA, dashed bool) {
	dx, dy := abs(x1-x0), -abs(y1-y0)
	sx, sy := sign(x1-x0), sign(y1-y0)
	e := dx + dy
	for n := 0; ; n++ {
		if !dashed || (n/6)%2 == 0 {
			if (image.Point{x0, y0}).In(img.Bounds()) {
				img.SetRGBA(x0, y0, c)
			}
		}
		if x0 == x1 && y0 == y1 {
			return
		}
		e2 := 2 * e
		if e2 >= dy {
			e += dy
			x0 += sx
		}
		if e2 <= dx {
			e += dx
			y0 += sy
		}
	}
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

func sign(v int) int {
	switch {
	case v < 0:
		return -1
	case v > 0:
		return 1
	}
	return 0
}

// text draws s at (x, y) in the 5x7 font scaled by scale; letters are
// drawn as capitals.
func text(img *image.RGBA, x, y, scale int, c color.RGBA, s string) {
	for _, ch := range strings.ToUpper(s) {
		if g, ok := glyphs[ch]; ok {
			for row, bits := range g {
				for col, b := range bits {
					if b == '#' {
						fill(img, image.Rect(x+col*scale, y+row*scale, x+(col+1)*scale, y+(row+1)*scale), c)
					}
				}
			}
		}
		x += 6 * scale
	}
}

var glyphs = map[rune][7]string{
	' ': {".....", ".....", ".....", ".....", ".....", ".....", "....."},
	'0': {".###.", "#...#", "#..##", "#.#.#", "##..#", "#...#", ".###."},
	'1': {"..#..", ".##..", "..#..", "..#..", "..#..", "..#..", ".###."},
	'2': {".###.", "#...#", "....#", "...#.", "..#..", ".#...", "#####"},
	'3': {"#####", "...#.", "..#..", "...#.", "....#", "#...#", ".###."},
	'4': {"...#.", "..##.", ".#.#.", "#..#.", "#####", "...#.", "...#."},
	'5': {"#####", "#....", "####.", "....#", "....#", "#...#", ".###."},
	'6': {"..##.", ".#...", "#....", "####.", "#...#", "#...#", ".###."},
	'7': {"#####", "....#", "...#.", "..#..", ".#...", ".#...", ".#..."},
	'8': {".###.", "#...#", "#...#", ".###.", "#...#", "#...#", ".###."},
	'9': {".###.", "#...#", "#...#", ".####", "....#", "...#.", ".##.."},
	'A': {".###.", "#...#", "#...#", "#####", "#...#", "#...#", "#...#"},
	'B': {"####.", "#...#", "#...#", "####.", "#...#", "#...#", "####."},
	'C': {".###.", "#...#", "#....", "#....", "#....", "#...#", ".###."},
	'D': {"####.", "#...#", "#...#", "#...#", "#...#", "#...#", "####."},
	'E': {"#####", "#....", "#....", "####.", "#....", "#....", "#####"},
	'F': {"#####", "#....", "#....", "####.", "#....", "#....", "#...."},
	'G': {".###.", "#...#", "#....", "#.###", "#...#", "#...#", ".####"},
	'H': {"#...#", "#...#", "#...#", "#####", "#...#", "#...#", "#...#"},
	'I': {".###.", "..#..", "..#..", "..#..", "..#..", "..#..", ".###."},
	'J': {"..###", "...#.", "...#.", "...#.", "...#.", "#..#.", ".##.."},
	'K': {"#...#", "#..#.", "#.#..", "##...", "#.#..", "#..#.", "#...#"},
	'L': {"#....", "#....", "#....", "#....", "#....", "#....", "#####"},
	'M': {"#...#", "##.##", "#.#.#", "#.#.#", "#...#", "#...#", "#...#"},
	'N': {"#...#", "#...#", "##..#", "#.#.#", "#..##", "#...#", "#...#"},
	'O': {".###.", "#...#", "#...#", "#...#", "#...#", "#...#", ".###."},
	'P': {"####.", "#...#", "#...#", "####.", "#....", "#....", "#...."},
	'Q': {".###.", "#...#", "#...#", "#...#", "#.#.#", "#..#.", ".##.#"},
	'R': {"####.", "#...#", "#...#", "####.", "#.#..", "#..#.", "#...#"},
	'S': {".####", "#....", "#....", ".###.", "....#", "....#", "####."},
	'T': {"#####", "..#..", "..#..", "..#..", "..#..", "..#..", "..#.."},
	'U': {"#...#", "#...#", "#...#", "#...#", "#...#", "#...#", ".###."},
	'V': {"#...#", "#...#", "#...#", "#...#", "#...#", ".#.#.", "..#.."},
	'W': {"#...#", "#...#", "#...#", "#.#.#", "#.#.#", "#.#.#", ".#.#."},
	'X': {"#...#", "#...#", ".#.#.", "..#..", ".#.#.", "#...#", "#...#"},
	'Y': {"#...#", "#...#", ".#.#.", "..#..", "..#..", "..#..", "..#.."},
	'Z': {"#####", "....#", "...#.", "..#..", ".#...", "#....", "#####"},
	'.': {".....", ".....", ".....", ".....", ".....", ".##..", ".##.."},
	',': {".....", ".....", ".....", ".....", ".##..", "..#..", ".#..."},
	':': {".....", ".##..", ".##..", ".....", ".##..", ".##..", "....."},
	'-': {".....", ".....", ".....", "#####", ".....", ".....", "....."},
	'/': {".....", "....#", "...#.", "..#..", ".#...", "#....", "....."},
	'(': {"...#.", "..#..", ".#...", ".#...", ".#...", "..#..", "...#."},
	')': {".#...", "..#..", "...#.", "...#.", "...#.", "..#..", ".#..."},
	'%': {"##...", "##..#", "...#.", "..#..", ".#...", "#..##", "...##"},
}
