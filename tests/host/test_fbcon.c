// fbcon: the framebuffer text console drawing into memory-backed screens of
// exactly pitch * height bytes (AddressSanitizer fails any stray write).
#include "host.h"
#include "fbcon.h"
#include <CUnit/CUnit.h>
#include <stdlib.h>
#include <string.h>

#define CELL_W 6
#define CELL_H 10
#define PAD 0xa5 // bytes past a line's last pixel, which must stay as they are

static const struct boot_fb xrgb32 = { .kind = BOOT_CON_RGB, .addr = 0x80000000, .pitch = 640 * 4 + 64,
				       .width = 640, .height = 480, .bpp = 32, .red_pos = 16,
				       .red_size = 8, .green_pos = 8, .green_size = 8, .blue_size = 8 };

static uint8_t *screen(const struct boot_fb *fb)
{
	uint8_t *p = malloc((size_t)fb->pitch * fb->height);
	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	memset(p, PAD, (size_t)fb->pitch * fb->height);
	return p;
}

static uint32_t pixel(const struct boot_fb *fb, const uint8_t *px, uint32_t x, uint32_t y)
{
	const uint8_t *p = px + (size_t)y * fb->pitch + (size_t)x * ((fb->bpp + 7) / 8);
	uint32_t v = 0;
	memcpy(&v, p, (fb->bpp + 7) / 8);
	return v;
}

// Lit pixels of the cell at line r, column c (scale 1) as a bitmap, one
// byte per pixel row; -1 when a pixel is neither black nor `fg`.
static int cell_bits(const struct boot_fb *fb, const uint8_t *px, int r, int c, uint32_t fg,
		     uint8_t out[CELL_H])
{
	for (int y = 0; y < CELL_H; y++) {
		out[y] = 0;
		for (int x = 0; x < CELL_W; x++) {
			uint32_t v = pixel(fb, px, (uint32_t)(c * CELL_W + x), (uint32_t)(r * CELL_H + y));
			if (v == fg)
				out[y] |= (uint8_t)(0x80 >> x);
			else if (v != 0)
				return -1;
		}
	}
	return 0;
}

static void pads_intact(const struct boot_fb *fb, const uint8_t *px)
{
	size_t line = (size_t)fb->width * ((fb->bpp + 7) / 8);
	for (uint32_t y = 0; y < fb->height; y++)
		for (size_t i = line; i < fb->pitch; i++)
			if (px[(size_t)y * fb->pitch + i] != PAD) {
				CU_FAIL("a byte past the last pixel of a line was written");
				return;
			}
}

static void test_fbcon_rejects(void)
{
	struct boot_fb fb = xrgb32;
	fb.kind = BOOT_CON_EGA_TEXT;
	CU_ASSERT_EQUAL(fbcon_init(&fb), -1);
	CU_ASSERT_EQUAL(fbcon_cols(), 0);
	fbcon_write("no screen\n", 10); // ignored, no crash
	fb = xrgb32;
	fb.bpp = 8;
	CU_ASSERT_EQUAL(fbcon_init(&fb), -1);
	fb = xrgb32;
	fb.width = 200, fb.height = 60; // 33 columns
	CU_ASSERT_EQUAL(fbcon_init(&fb), -1);
	fb = xrgb32;
	fb.pitch = 100;
	CU_ASSERT_EQUAL(fbcon_init(&fb), -1);
	fbcon_attach(NULL); // not initialised: nothing drawn
	CU_ASSERT_EQUAL(fbcon_init(&xrgb32), 0);
	CU_ASSERT_EQUAL(fbcon_cols(), 640 / CELL_W);
	CU_ASSERT_EQUAL(fbcon_rows(), 480 / CELL_H);
}

// 'A' of the font drawn in light grey, black around it, nothing else lit.
static void test_fbcon_draws_glyph(void)
{
	static const uint8_t want_a[CELL_H] = { 0x70, 0x88, 0x88, 0xf8, 0x88, 0x88, 0x88, 0, 0, 0 };
	uint8_t *px = screen(&xrgb32), got[CELL_H];
	CU_ASSERT_EQUAL_FATAL(fbcon_init(&xrgb32), 0);
	fbcon_attach(px);
	fbcon_write("A", 1);
	CU_ASSERT_EQUAL(cell_bits(&xrgb32, px, 0, 0, 0xc0c0c0, got), 0);
	CU_ASSERT_EQUAL(memcmp(got, want_a, CELL_H), 0);
	int lit = 0;
	for (uint32_t y = 0; y < xrgb32.height; y++)
		for (uint32_t x = 0; x < xrgb32.width; x++)
			lit += pixel(&xrgb32, px, x, y) != 0;
	CU_ASSERT_EQUAL(lit, 18); // the 18 pixels of 'A'
	pads_intact(&xrgb32, px);
	free(px);
}

// 16 bits 5:6:5 and 24 bits: the same shape, the colour packed per format.
static void test_fbcon_pixel_formats(void)
{
	struct boot_fb f16 = { .kind = BOOT_CON_RGB, .addr = 1, .pitch = 640 * 2, .width = 640,
			       .height = 480, .bpp = 16, .red_pos = 11, .red_size = 5, .green_pos = 5,
			       .green_size = 6, .blue_size = 5 };
	struct boot_fb f24 = { .kind = BOOT_CON_RGB, .addr = 1, .pitch = 640 * 3 + 4, .width = 640,
			       .height = 480, .bpp = 24, .red_size = 8, .green_pos = 8,
			       .green_size = 8, .blue_pos = 16, .blue_size = 8 };
	uint8_t ref[CELL_H], got[CELL_H];
	uint8_t *px = screen(&xrgb32);
	CU_ASSERT_EQUAL_FATAL(fbcon_init(&xrgb32), 0);
	fbcon_attach(px);
	fbcon_write("g", 1);
	CU_ASSERT_EQUAL(cell_bits(&xrgb32, px, 0, 0, 0xc0c0c0, ref), 0);
	free(px);
	px = screen(&f16);
	CU_ASSERT_EQUAL_FATAL(fbcon_init(&f16), 0);
	fbcon_attach(px);
	fbcon_write("g", 1);
	CU_ASSERT_EQUAL(cell_bits(&f16, px, 0, 0, (24u << 11) | (48u << 5) | 24u, got), 0);
	CU_ASSERT_EQUAL(memcmp(got, ref, CELL_H), 0);
	CU_ASSERT_NOT_EQUAL(got[8], 0); // the descender is drawn
	free(px);
	px = screen(&f24);
	CU_ASSERT_EQUAL_FATAL(fbcon_init(&f24), 0);
	fbcon_attach(px);
	fbcon_write("g", 1);
	CU_ASSERT_EQUAL(cell_bits(&f24, px, 0, 0, 0xc0c0c0, got), 0);
	CU_ASSERT_EQUAL(memcmp(got, ref, CELL_H), 0);
	pads_intact(&f24, px);
	free(px);
}

// The cell bitmaps of every printable character, drawn one per cell.
static uint8_t glyphs[95][CELL_H];

static void reference_glyphs(void)
{
	uint8_t *px = screen(&xrgb32);
	CU_ASSERT_EQUAL_FATAL(fbcon_init(&xrgb32), 0);
	fbcon_attach(px);
	for (int c = 32; c < 127; c++) {
		char ch = (char)c;
		fbcon_write(&ch, 1);
	}
	for (int c = 0; c < 95; c++)
		CU_ASSERT_EQUAL(cell_bits(&xrgb32, px, 0, c, 0xc0c0c0, glyphs[c]), 0);
	free(px);
}

static bool cell_is(const uint8_t *px, int r, int c, char ch)
{
	uint8_t got[CELL_H];
	return cell_bits(&xrgb32, px, r, c, 0xc0c0c0, got) == 0 &&
	       memcmp(got, glyphs[ch - 32], CELL_H) == 0;
}

static void test_fbcon_glyphs_distinct(void)
{
	reference_glyphs();
	for (int a = 1; a < 95; a++) {
		bool blank = true;
		for (int y = 0; y < CELL_H; y++)
			blank &= glyphs[a][y] == 0;
		CU_ASSERT_FALSE(blank);
		for (int y = 0; y < CELL_H; y++)
			CU_ASSERT_EQUAL(glyphs[a][y] & 0x07, 0); // 5 wide, a column to spare
		for (int b = 0; b < a; b++)
			CU_ASSERT_NOT_EQUAL(memcmp(glyphs[a], glyphs[b], CELL_H), 0);
	}
}

// Lines wrap at the last column; tabs go to the next multiple of 8;
// control bytes show as '?'; a full screen jumps up by half.
static void test_fbcon_wrap_tab_scroll(void)
{
	reference_glyphs();
	uint8_t *px = screen(&xrgb32);
	CU_ASSERT_EQUAL_FATAL(fbcon_init(&xrgb32), 0);
	fbcon_attach(px);
	int cols = fbcon_cols(), rows = fbcon_rows();
	char line[300];
	memset(line, 'x', sizeof(line));
	line[cols + 2] = 'W';
	fbcon_write(line, (size_t)cols + 3);
	CU_ASSERT_TRUE(cell_is(px, 0, cols - 1, 'x'));
	CU_ASSERT_TRUE(cell_is(px, 1, 2, 'W'));
	fbcon_write("\na\tb\x01\r\n", 7);
	CU_ASSERT_TRUE(cell_is(px, 2, 0, 'a'));
	CU_ASSERT_TRUE(cell_is(px, 2, 8, 'b'));
	CU_ASSERT_TRUE(cell_is(px, 2, 9, '?'));
	CU_ASSERT_TRUE(cell_is(px, 2, 1, ' '));
	// Lines 3.. get a letter each until the screen is full and jumps.
	for (int r = 3; r < rows; r++) {
		char s[2] = { (char)('A' + r % 26), '\n' };
		fbcon_write(s, 2);
	}
	// The newline of the last line jumped: line rows/2 is now at the top.
	int jump = rows / 2;
	CU_ASSERT_TRUE(cell_is(px, 0, 0, (char)('A' + jump % 26)));
	CU_ASSERT_TRUE(cell_is(px, rows - jump - 1, 0, (char)('A' + (rows - 1) % 26)));
	for (int r = rows - jump; r < rows; r++)
		CU_ASSERT_TRUE(cell_is(px, r, 0, ' '));
	fbcon_write("z", 1);
	CU_ASSERT_TRUE(cell_is(px, rows - jump, 0, 'z'));
	// Many screens more: still within the buffer, the last line last.
	for (int i = 0; i < 5 * rows; i++)
		fbcon_write("0123456789\n", 11);
	fbcon_write("end", 3);
	CU_ASSERT_TRUE(cell_is(px, rows - jump, 0, 'e'));
	CU_ASSERT_TRUE(cell_is(px, rows - jump - 1, 9, '9'));
	pads_intact(&xrgb32, px);
	free(px);
}

// Text written before the framebuffer is mapped appears when it is; a big
// screen scales the font by a whole factor; a very wide one caps the
// columns (nothing drawn past the cap).
static void test_fbcon_late_attach_and_scale(void)
{
	reference_glyphs();
	uint8_t *px = screen(&xrgb32);
	CU_ASSERT_EQUAL_FATAL(fbcon_init(&xrgb32), 0);
	fbcon_write("early\nQ", 7);
	fbcon_attach(px);
	CU_ASSERT_TRUE(cell_is(px, 0, 0, 'e'));
	CU_ASSERT_TRUE(cell_is(px, 1, 0, 'Q'));
	free(px);

	struct boot_fb big = xrgb32;
	big.width = 1920, big.height = 1080, big.pitch = 1920 * 4;
	px = screen(&big);
	CU_ASSERT_EQUAL_FATAL(fbcon_init(&big), 0);
	CU_ASSERT_EQUAL(fbcon_cols(), 1920 / (2 * CELL_W));
	CU_ASSERT_EQUAL(fbcon_rows(), 1080 / (2 * CELL_H));
	fbcon_attach(px);
	fbcon_write("A", 1);
	// 'A' row 0 is .###. : pixels 2..7 lit on lines 0 and 1, 0..1 dark.
	for (uint32_t y = 0; y < 2; y++) {
		CU_ASSERT_EQUAL(pixel(&big, px, 1, y), 0);
		for (uint32_t x = 2; x < 8; x++)
			CU_ASSERT_EQUAL(pixel(&big, px, x, y), 0xc0c0c0);
		CU_ASSERT_EQUAL(pixel(&big, px, 8, y), 0);
	}
	free(px);

	struct boot_fb wide = xrgb32;
	wide.width = 4000, wide.height = 120, wide.pitch = 4000 * 4;
	px = screen(&wide);
	CU_ASSERT_EQUAL_FATAL(fbcon_init(&wide), 0);
	CU_ASSERT_EQUAL(fbcon_cols(), 256);
	fbcon_attach(px);
	char line[600];
	memset(line, '#', sizeof(line));
	fbcon_write(line, sizeof(line));
	for (uint32_t x = 256 * CELL_W; x < wide.width; x++)
		for (uint32_t y = 0; y < wide.height; y++)
			if (pixel(&wide, px, x, y) != 0) {
				CU_FAIL("lit past the last column");
				x = wide.width;
				break;
			}
	free(px);
}

int register_fbcon(void)
{
	static const struct test_case t[] = {
		TEST(test_fbcon_rejects),
		TEST(test_fbcon_draws_glyph),
		TEST(test_fbcon_pixel_formats),
		TEST(test_fbcon_glyphs_distinct),
		TEST(test_fbcon_wrap_tab_scroll),
		TEST(test_fbcon_late_attach_and_scale),
	};
	return ADD_SUITE("fbcon", NULL, NULL, t);
}
