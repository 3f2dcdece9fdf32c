/* Unit tests of accel/accel_device: the shipped devices file, every kind of error the loader
 * refuses (each naming the file, the device and the field), the JSON view reloading to the same
 * device, and the hash telling configurations apart. */
#include "accel_test_util.h"

#include <unistd.h>

#include "core/file.h"

/* Writes text to a fresh temporary file; the caller unlinks it. */
static void temp_file(const char *text, char *path, size_t cap)
{
    snprintf(path, cap, "/tmp/kt_accel_devices_XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    size_t n = strlen(text);
    assert_int_equal(write(fd, text, n), (ssize_t)n);
    close(fd);
}

static void shipped_devices_load(void **state)
{
    (void)state;
    int n;
    accel_device *d = load_shipped(&n);
    assert_int_equal(n, 2);
    assert_string_equal(d[0].name, "mindmap");
    assert_int_equal(d[0].pes, 256);
    assert_int_equal(d[0].l1_bytes, 65536);
    assert_int_equal(d[0].l2_bytes, 524288);
    assert_int_equal(d[0].l1_banks, 8);
    assert_int_equal(d[0].word_bytes, 2);
    assert_true(d[0].clock_ghz == 1.0);
    assert_string_equal(d[1].name, "mindmap-small");
    assert_int_equal(d[1].pes, 64);
    assert_int_equal(d[1].l1_bytes, 16384);
    assert_int_equal(d[1].l2_bytes, 131072);
    assert_true(accel_device_hash(&d[0]) != accel_device_hash(&d[1]));
    accel_devices_free(d, n);
}

static const char *good_device =
    "{\"name\": \"x\", \"pes\": 16, \"l1_bytes\": 1024, \"l2_bytes\": 8192, \"l1_banks\": 4, "
    "\"l2_banks\": 8, \"word_bytes\": 2, \"clock_ghz\": 1.5, \"mac_pj\": 0.5, "
    "\"access_pj\": [1, 5, 100], \"words_per_cycle\": [2, 32, 8]}";

/* Loads text as a devices file; returns the result, err filled. */
static int load_text(const char *text, accel_device **d, int *n, kt_error *err)
{
    char path[64];
    temp_file(text, path, sizeof path);
    kt_error_clear(err);
    int rc = accel_devices_load(path, d, n, err);
    unlink(path);
    return rc;
}

/* A devices file of one device: good_device with `from` replaced by `to`. */
static void expect_error(const char *from, const char *to, const char *needle)
{
    char dev[1024], text[1200];
    const char *at = strstr(good_device, from);
    assert_non_null(at);
    snprintf(dev, sizeof dev, "%.*s%s%s", (int)(at - good_device), good_device, to,
             at + strlen(from));
    snprintf(text, sizeof text, "{\"devices\": [%s]}", dev);
    accel_device *d = (accel_device *)1;
    int n = 7;
    kt_error err;
    assert_int_equal(load_text(text, &d, &n, &err), -1);
    assert_null(d);
    assert_int_equal(n, 0);
    assert_int_equal(err.code, KT_ERR_CONFIG);
    if (!strstr(err.message, needle))
        fail_msg("'%s' not in '%s'", needle, err.message);
    assert_non_null(strstr(err.message, "/tmp/kt_accel_devices_"));
}

static void bad_fields_are_refused_by_name(void **state)
{
    (void)state;
    expect_error("\"pes\": 16, ", "", "device 'x': pes: missing");
    expect_error("\"pes\": 16", "\"pes\": 0", "device 'x': pes: 0 is out of range [1, 65536]");
    expect_error("\"pes\": 16", "\"pes\": 1.5", "device 'x': pes: not an integer");
    expect_error("\"l1_banks\": 4", "\"l1_banks\": 3", "device 'x': l1_banks: 3 is out of range");
    expect_error("\"l1_bytes\": 1024, \"l2_bytes\": 8192, \"l1_banks\": 4, \"l2_banks\": 8, "
                 "\"word_bytes\": 2",
                 "\"l1_bytes\": 16, \"l2_bytes\": 8192, \"l1_banks\": 4, \"l2_banks\": 8, "
                 "\"word_bytes\": 8",
                 "device 'x': l1_bytes: smaller than one word per bank");
    expect_error("\"clock_ghz\": 1.5", "\"clock_ghz\": 0",
                 "device 'x': clock_ghz: 0 is out of range");
    expect_error("\"mac_pj\": 0.5", "\"mac_pj\": \"a\"", "device 'x': mac_pj: not a number");
    expect_error("[1, 5, 100]", "[1, 5]", "device 'x': access_pj: not an array of 3 numbers");
    expect_error("[2, 32, 8]", "[2, -1, 8]",
                 "device 'x': words_per_cycle[1] (L2): -1 is out of range");
    expect_error("\"pes\": 16", "\"pes\": 16, \"colour\": 1", "device 'x': colour: unknown field");
    expect_error("\"name\": \"x\"", "\"name\": \"a b\"", "device '#0': name: not an identifier");
    expect_error("\"name\": \"x\"", "\"name\": \"-x\"", "device '#0': name: not an identifier");
    expect_error("\"name\": \"x\"", "\"name\": \"abcdefghijabcdefghijabcdefghijabc\"",
                 "name: not an identifier");
    expect_error("\"name\": \"x\", ", "", "device '#0': name: missing");
}

static void bad_files_are_refused(void **state)
{
    (void)state;
    accel_device *d;
    int n;
    kt_error err;
    assert_int_equal(load_text("{\"devices\": [", &d, &n, &err), -1);
    assert_int_equal(err.code, KT_ERR_CONFIG);
    assert_non_null(strstr(err.message, "line 1"));
    assert_int_equal(load_text("{\"devices\": []}", &d, &n, &err), -1);
    assert_non_null(strstr(err.message, "0 devices, expected 1 to 32"));
    assert_int_equal(load_text("{\"devices\": [], \"x\": 1}", &d, &n, &err), -1);
    assert_non_null(strstr(err.message, "one field, \"devices\""));
    assert_int_equal(load_text("{\"devices\": [1]}", &d, &n, &err), -1);
    assert_non_null(strstr(err.message, "device '#0': (device): not an object"));
    char text[2600];
    snprintf(text, sizeof text, "{\"devices\": [%s, %s]}", good_device, good_device);
    assert_int_equal(load_text(text, &d, &n, &err), -1);
    assert_non_null(strstr(err.message, "device 'x': name: duplicate device name"));
    kt_error_clear(&err);
    assert_int_equal(accel_devices_load("/nonexistent/devices.json", &d, &n, &err), -1);
    assert_int_equal(err.code, KT_ERR_CONFIG);
    assert_non_null(strstr(err.message, "/nonexistent/devices.json"));
}

/* accel_device_json reloads to the same device (same hash); changing any field changes the hash. */
static void json_round_trips_and_hash_separates(void **state)
{
    (void)state;
    int n;
    accel_device *d = load_shipped(&n);
    for (int i = 0; i < n; i++) {
        json_t *dev = accel_device_json(&d[i]);
        json_t *file = json_pack("{s:[o]}", "devices", dev);
        char *text = json_dumps(file, 0);
        accel_device *back;
        int nb;
        kt_error err;
        assert_int_equal(load_text(text, &back, &nb, &err), 0);
        assert_int_equal(nb, 1);
        assert_true(accel_device_hash(&back[0]) == accel_device_hash(&d[i]));
        assert_memory_equal(&back[0], &d[i], sizeof d[i]);
        accel_devices_free(back, nb);
        free(text);
        json_decref(file);
    }
    accel_device a = d[0];
    uint64_t h = accel_device_hash(&a);
    a.access_pj[2] *= 1.0000001;
    assert_true(accel_device_hash(&a) != h);
    a = d[0];
    a.l2_banks = 16;
    assert_true(accel_device_hash(&a) != h);
    a = d[0];
    a.words_per_cycle[0] = 2;
    assert_true(accel_device_hash(&a) != h);
    accel_devices_free(d, n);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(shipped_devices_load),
        cmocka_unit_test(bad_fields_are_refused_by_name),
        cmocka_unit_test(bad_files_are_refused),
        cmocka_unit_test(json_round_trips_and_hash_separates),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
