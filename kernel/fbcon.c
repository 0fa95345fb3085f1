// Text console on a linear framebuffer: a 5x9 font of our own in 6x10
// cells, scaled by a whole factor so a line holds 100-200 characters, light
// grey on black. A shadow of the characters lets the screen scroll by
// redrawing (it jumps half a screen at a time: a redraw writes every pixel,
// which is slow on an uncached framebuffer) and lets text written before the
// framebuffer is mapped appear once it is.
#include "fbcon.h"
#include <string.h>

#define GLYPH_W 5
#define GLYPH_H 9 // rows 0-6 letters and digits, 7-8 descenders
#define CELL_W 6
#define CELL_H 10
#define MAX_COLS 256
#define MAX_ROWS 128
#define FG 0xc0 // each of red, green and blue

// Glyphs for ' ' to '~', one string of rows of 5 ('#' lit), top row first;
// missing rows are blank.
static const char font_art[95][GLYPH_W * GLYPH_H + 1] = {
	[' ' - 32] = ".....",
	['!' - 32] = "..#.." "..#.." "..#.." "..#.." "..#.." "....." "..#..",
	['"' - 32] = ".#.#." ".#.#.",
	['#' - 32] = ".#.#." ".#.#." "#####" ".#.#." "#####" ".#.#." ".#.#.",
	['$' - 32] = "..#.." ".####" "#.#.." ".###." "..#.#" "####." "..#..",
	['%' - 32] = "##..." "##..#" "...#." "..#.." ".#..." "#..##" "...##",
	['&' - 32] = ".##.." "#..#." "#.#.." ".#..." "#.#.#" "#..#." ".##.#",
	['\'' - 32] = "..#.." "..#.." ".#...",
	['(' - 32] = "...#." "..#.." ".#..." ".#..." ".#..." "..#.." "...#.",
	[')' - 32] = ".#..." "..#.." "...#." "...#." "...#." "..#.." ".#...",
	['*' - 32] = "....." "..#.." "#.#.#" ".###." "#.#.#" "..#..",
	['+' - 32] = "....." "..#.." "..#.." "#####" "..#.." "..#..",
	[',' - 32] = "....." "....." "....." "....." "....." ".##.." "..#.." ".#...",
	['-' - 32] = "....." "....." "....." "#####",
	['.' - 32] = "....." "....." "....." "....." "....." ".##.." ".##..",
	['/' - 32] = "....." "....#" "...#." "..#.." ".#..." "#....",
	['0' - 32] = ".###." "#...#" "#..##" "#.#.#" "##..#" "#...#" ".###.",
	['1' - 32] = "..#.." ".##.." "..#.." "..#.." "..#.." "..#.." ".###.",
	['2' - 32] = ".###." "#...#" "....#" "...#." "..#.." ".#..." "#####",
	['3' - 32] = "#####" "...#." "..#.." "...#." "....#" "#...#" ".###.",
	['4' - 32] = "...#." "..##." ".#.#." "#..#." "#####" "...#." "...#.",
	['5' - 32] = "#####" "#...." "####." "....#" "....#" "#...#" ".###.",
	['6' - 32] = "..##." ".#..." "#...." "####." "#...#" "#...#" ".###.",
	['7' - 32] = "#####" "....#" "...#." "..#.." ".#..." ".#..." ".#...",
	['8' - 32] = ".###." "#...#" "#...#" ".###." "#...#" "#...#" ".###.",
	['9' - 32] = ".###." "#...#" "#...#" ".####" "....#" "...#." ".##..",
	[':' - 32] = "....." ".##.." ".##.." "....." ".##.." ".##..",
	[';' - 32] = "....." ".##.." ".##.." "....." ".##.." "..#.." ".#...",
	['<' - 32] = "...#." "..#.." ".#..." "#...." ".#..." "..#.." "...#.",
	['=' - 32] = "....." "....." "#####" "....." "#####",
	['>' - 32] = ".#..." "..#.." "...#." "....#" "...#." "..#.." ".#...",
	['?' - 32] = ".###." "#...#" "....#" "...#." "..#.." "....." "..#..",
	['@' - 32] = ".###." "#...#" "....#" ".##.#" "#.#.#" "#.#.#" ".###.",
	['A' - 32] = ".###." "#...#" "#...#" "#####" "#...#" "#...#" "#...#",
	['B' - 32] = "####." "#...#" "#...#" "####." "#...#" "#...#" "####.",
	['C' - 32] = ".###." "#...#" "#...." "#...." "#...." "#...#" ".###.",
	['D' - 32] = "###.." "#..#." "#...#" "#...#" "#...#" "#..#." "###..",
	['E' - 32] = "#####" "#...." "#...." "####." "#...." "#...." "#####",
	['F' - 32] = "#####" "#...." "#...." "####." "#...." "#...." "#....",
	['G' - 32] = ".###." "#...#" "#...." "#.###" "#...#" "#...#" ".####",
	['H' - 32] = "#...#" "#...#" "#...#" "#####" "#...#" "#...#" "#...#",
	['I' - 32] = ".###." "..#.." "..#.." "..#.." "..#.." "..#.." ".###.",
	['J' - 32] = "..###" "...#." "...#." "...#." "...#." "#..#." ".##..",
	['K' - 32] = "#...#" "#..#." "#.#.." "##..." "#.#.." "#..#." "#...#",
	['L' - 32] = "#...." "#...." "#...." "#...." "#...." "#...." "#####",
	['M' - 32] = "#...#" "##.##" "#.#.#" "#.#.#" "#...#" "#...#" "#...#",
	['N' - 32] = "#...#" "#...#" "##..#" "#.#.#" "#..##" "#...#" "#...#",
	['O' - 32] = ".###." "#...#" "#...#" "#...#" "#...#" "#...#" ".###.",
	['P' - 32] = "####." "#...#" "#...#" "####." "#...." "#...." "#....",
	['Q' - 32] = ".###." "#...#" "#...#" "#...#" "#.#.#" "#..#." ".##.#",
	['R' - 32] = "####." "#...#" "#...#" "####." "#.#.." "#..#." "#...#",
	['S' - 32] = ".####" "#...." "#...." ".###." "....#" "....#" "####.",
	['T' - 32] = "#####" "..#.." "..#.." "..#.." "..#.." "..#.." "..#..",
	['U' - 32] = "#...#" "#...#" "#...#" "#...#" "#...#" "#...#" ".###.",
	['V' - 32] = "#...#" "#...#" "#...#" "#...#" "#...#" ".#.#." "..#..",
	['W' - 32] = "#...#" "#...#" "#...#" "#.#.#" "#.#.#" "#.#.#" ".#.#.",
	['X' - 32] = "#...#" "#...#" ".#.#." "..#.." ".#.#." "#...#" "#...#",
	['Y' - 32] = "#...#" "#...#" ".#.#." "..#.." "..#.." "..#.." "..#..",
	['Z' - 32] = "#####" "....#" "...#." "..#.." ".#..." "#...." "#####",
	['[' - 32] = ".###." ".#..." ".#..." ".#..." ".#..." ".#..." ".###.",
	['\\' - 32] = "....." "#...." ".#..." "..#.." "...#." "....#",
	[']' - 32] = ".###." "...#." "...#." "...#." "...#." "...#." ".###.",
	['^' - 32] = "..#.." ".#.#." "#...#",
	['_' - 32] = "....." "....." "....." "....." "....." "....." "....." "#####",
	['`' - 32] = ".#..." "..#.." "...#.",
	['a' - 32] = "....." "....." ".###." "....#" ".####" "#...#" ".####",
	['b' - 32] = "#...." "#...." "#.##." "##..#" "#...#" "#...#" "####.",
	['c' - 32] = "....." "....." ".###." "#...." "#...." "#...#" ".###.",
	['d' - 32] = "....#" "....#" ".##.#" "#..##" "#...#" "#...#" ".####",
	['e' - 32] = "....." "....." ".###." "#...#" "#####" "#...." ".###.",
	['f' - 32] = "..##." ".#..#" ".#..." "###.." ".#..." ".#..." ".#...",
	['g' - 32] = "....." "....." ".####" "#...#" "#...#" ".####" "....#" "#...#" ".###.",
	['h' - 32] = "#...." "#...." "#.##." "##..#" "#...#" "#...#" "#...#",
	['i' - 32] = "..#.." "....." ".##.." "..#.." "..#.." "..#.." ".###.",
	['j' - 32] = "...#." "....." "..##." "...#." "...#." "...#." "...#." "#..#." ".##..",
	['k' - 32] = "#...." "#...." "#..#." "#.#.." "##..." "#.#.." "#..#.",
	['l' - 32] = ".##.." "..#.." "..#.." "..#.." "..#.." "..#.." ".###.",
	['m' - 32] = "....." "....." "##.#." "#.#.#" "#.#.#" "#.#.#" "#.#.#",
	['n' - 32] = "....." "....." "#.##." "##..#" "#...#" "#...#" "#...#",
	['o' - 32] = "....." "....." ".###." "#...#" "#...#" "#...#" ".###.",
	['p' - 32] = "....." "....." "####." "#...#" "#...#" "####." "#...." "#...." "#....",
	['q' - 32] = "....." "....." ".####" "#...#" "#...#" ".####" "....#" "....#" "....#",
	['r' - 32] = "....." "....." "#.##." "##..#" "#...." "#...." "#....",
	['s' - 32] = "....." "....." ".####" "#...." ".###." "....#" "####.",
	['t' - 32] = ".#..." ".#..." "###.." ".#..." ".#..." ".#..#" "..##.",
	['u' - 32] = "....." "....." "#...#" "#...#" "#...#" "#..##" ".##.#",
	['v' - 32] = "....." "....." "#...#" "#...#" "#...#" ".#.#." "..#..",
	['w' - 32] = "....." "....." "#...#" "#...#" "#.#.#" "#.#.#" ".#.#.",
	['x' - 32] = "....." "....." "#...#" ".#.#." "..#.." ".#.#." "#...#",
	['y' - 32] = "....." "....." "#...#" "#...#" "#...#" ".####" "....#" "#...#" ".###.",
	['z' - 32] = "....." "....." "#####" "...#." "..#.." ".#..." "#####",
	['{' - 32] = "...##" "..#.." "..#.." ".#..." "..#.." "..#.." "...##",
	['|' - 32] = "..#.." "..#.." "..#.." "..#.." "..#.." "..#.." "..#..",
	['}' - 32] = "##..." "..#.." "..#.." "...#." "..#.." "..#.." "##...",
	['~' - 32] = "....." "....." ".#..." "#.#.#" "...#.",
};

static struct {
	struct boot_fb fb;
	uint8_t *px;       // NULL until attached
	uint32_t fg;       // the text colour as a pixel value
	int bytes;         // per pixel
	int scale, cols, rows, row, col;
	uint8_t glyph[95][GLYPH_H]; // bit 4 = leftmost column
	char text[MAX_ROWS][MAX_COLS];
} con;

// An 8-bit channel value placed in its field of the pixel.
static uint32_t channel(uint8_t v, uint8_t pos, uint8_t size)
{
	return (uint32_t)(v >> (8 - size)) << pos;
}

static void put_pixel(uint8_t *p, uint32_t v)
{
	if (con.bytes == 4)
		memcpy(p, &v, 4);
	else if (con.bytes == 3)
		p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8), p[2] = (uint8_t)(v >> 16);
	else
		memcpy(p, &v, 2);
}

static void build_glyphs(void)
{
	for (int c = 0; c < 95; c++)
		for (int i = 0; font_art[c][i] && i < GLYPH_W * GLYPH_H; i++)
			if (font_art[c][i] == '#')
				con.glyph[c][i / GLYPH_W] |= (uint8_t)(1u << (GLYPH_W - 1 - i % GLYPH_W));
}

int fbcon_init(const struct boot_fb *fb)
{
	memset(&con, 0, sizeof(con));
	if (fb->kind != BOOT_CON_RGB ||
	    (fb->bpp != 15 && fb->bpp != 16 && fb->bpp != 24 && fb->bpp != 32))
		return -1;
	con.fb = *fb;
	con.bytes = (fb->bpp + 7) / 8;
	if ((uint64_t)fb->pitch < (uint64_t)fb->width * (uint32_t)con.bytes)
		return -1;
	uint32_t s = fb->width / 640 < fb->height / 480 ? fb->width / 640 : fb->height / 480;
	con.scale = s ? (int)s : 1;
	uint32_t cols = fb->width / (CELL_W * (uint32_t)con.scale);
	uint32_t rows = fb->height / (CELL_H * (uint32_t)con.scale);
	if (cols < 40 || rows < 10)
		return con.scale = 0, -1;
	con.cols = cols > MAX_COLS ? MAX_COLS : (int)cols;
	con.rows = rows > MAX_ROWS ? MAX_ROWS : (int)rows;
	con.fg = channel(FG, fb->red_pos, fb->red_size) | channel(FG, fb->green_pos, fb->green_size) |
		 channel(FG, fb->blue_pos, fb->blue_size);
	memset(con.text, ' ', sizeof(con.text));
	build_glyphs();
	return 0;
}

int fbcon_cols(void) { return con.cols; }
int fbcon_rows(void) { return con.rows; }

// Lines [r, r + n) of the text area to black (every field 0).
static void clear_lines(int r, int n)
{
	uint32_t y0 = (uint32_t)(r * CELL_H * con.scale), y1 = (uint32_t)((r + n) * CELL_H * con.scale);
	size_t w = (size_t)con.cols * CELL_W * (size_t)con.scale * (size_t)con.bytes;
	for (uint32_t y = y0; y < y1; y++)
		memset(con.px + (size_t)y * con.fb.pitch, 0, w);
}

// Lights the glyph's pixels in a cell that is black.
static void draw_cell(int r, int c, char ch)
{
	if (ch <= ' ' || ch > '~')
		return;
	const uint8_t *g = con.glyph[ch - 32];
	int s = con.scale;
	size_t x0 = (size_t)c * CELL_W * (size_t)s, y0 = (size_t)r * CELL_H * (size_t)s;
	for (int gy = 0; gy < GLYPH_H; gy++)
		for (int gx = 0; gx < GLYPH_W; gx++) {
			if (!(g[gy] & (1u << (GLYPH_W - 1 - gx))))
				continue;
			for (int dy = 0; dy < s; dy++) {
				uint8_t *p = con.px + (y0 + (size_t)(gy * s + dy)) * con.fb.pitch +
					     (x0 + (size_t)(gx * s)) * (size_t)con.bytes;
				for (int dx = 0; dx < s; dx++, p += con.bytes)
					put_pixel(p, con.fg);
			}
		}
}

static void redraw(void)
{
	clear_lines(0, con.rows);
	for (int r = 0; r < con.rows; r++)
		for (int c = 0; c < con.cols; c++)
			draw_cell(r, c, con.text[r][c]);
}

void fbcon_attach(void *pixels)
{
	if (!con.scale)
		return;
	con.px = pixels;
	for (uint32_t y = 0; y < con.fb.height; y++) // the margins too
		memset(con.px + (size_t)y * con.fb.pitch, 0, (size_t)con.fb.width * (size_t)con.bytes);
	redraw();
}

static void newline(void)
{
	con.col = 0;
	if (++con.row == con.rows) {
		int jump = con.rows / 2;
		memmove(con.text[0], con.text[jump], (size_t)(con.rows - jump) * MAX_COLS);
		memset(con.text[con.rows - jump], ' ', (size_t)jump * MAX_COLS);
		con.row = con.rows - jump;
		if (con.px)
			redraw();
		return;
	}
	memset(con.text[con.row], ' ', MAX_COLS);
	if (con.px)
		clear_lines(con.row, 1);
}

static void put_char(char ch)
{
	if (ch == '\n') {
		newline();
		return;
	}
	if (ch == '\r')
		return;
	if (ch == '\t') {
		do
			put_char(' ');
		while (con.col % 8);
		return;
	}
	if (ch < ' ' || ch > '~')
		ch = '?';
	con.text[con.row][con.col] = ch;
	if (con.px)
		draw_cell(con.row, con.col, ch);
	if (++con.col == con.cols)
		newline();
}

void fbcon_write(const char *s, size_t n)
{
	if (!con.scale)
		return;
	for (size_t i = 0; i < n; i++)
		put_char(s[i]);
}
