/* class_tests.h: one cmocka test per input class, each running every
 * dimension, scalar and periodicity of that class against a list of
 * configurations: DEFINE_CLASS_TESTS(prefix, configs, count) defines the
 * functions, CLASS_TEST_ENTRIES(prefix) lists them for cmocka. */
#ifndef PROX_TESTS_CLASS_TESTS_H
#define PROX_TESTS_CLASS_TESTS_H

#include "check.h"

#define DEFINE_ONE_CLASS_TEST(prefix, name, cls, configs, count)                          \
    static void prefix##_matches_oracle_on_##name(void **state)                            \
    {                                                                                      \
        (void)state;                                                                       \
        check_class(cls, configs, count);                                                  \
    }

#define DEFINE_CLASS_TESTS(prefix, configs, count)                                         \
    DEFINE_ONE_CLASS_TEST(prefix, uniform, INPUT_UNIFORM, configs, count)                  \
    DEFINE_ONE_CLASS_TEST(prefix, clustered, INPUT_CLUSTERED, configs, count)              \
    DEFINE_ONE_CLASS_TEST(prefix, duplicates, INPUT_DUPLICATES, configs, count)            \
    DEFINE_ONE_CLASS_TEST(prefix, lattice_on_cell_faces, INPUT_LATTICE, configs, count)    \
    DEFINE_ONE_CLASS_TEST(prefix, half_lattice, INPUT_HALF_LATTICE, configs, count)        \
    DEFINE_ONE_CLASS_TEST(prefix, decimal_lattice, INPUT_DECIMAL_LATTICE, configs, count)  \
    DEFINE_ONE_CLASS_TEST(prefix, negative_coordinates, INPUT_NEGATIVE, configs, count)    \
    DEFINE_ONE_CLASS_TEST(prefix, mixed_sign, INPUT_MIXED_SIGN, configs, count)            \
    DEFINE_ONE_CLASS_TEST(prefix, huge_offset, INPUT_HUGE_OFFSET, configs, count)          \
    DEFINE_ONE_CLASS_TEST(prefix, empty, INPUT_EMPTY, configs, count)                      \
    DEFINE_ONE_CLASS_TEST(prefix, single_point, INPUT_SINGLE, configs, count)              \
    DEFINE_ONE_CLASS_TEST(prefix, all_equal, INPUT_ALL_EQUAL, configs, count)              \
    DEFINE_ONE_CLASS_TEST(prefix, tiny_radius, INPUT_TINY_RADIUS, configs, count)          \
    DEFINE_ONE_CLASS_TEST(prefix, huge_radius, INPUT_HUGE_RADIUS, configs, count)          \
    DEFINE_ONE_CLASS_TEST(prefix, far_outlier, INPUT_OUTLIER, configs, count)              \
    DEFINE_ONE_CLASS_TEST(prefix, narrow_period, INPUT_NARROW_PERIOD, configs, count)      \
    DEFINE_ONE_CLASS_TEST(prefix, seam, INPUT_SEAM, configs, count)

#define CLASS_TEST_ENTRIES(prefix)                                                         \
    cmocka_unit_test(prefix##_matches_oracle_on_uniform),                                  \
        cmocka_unit_test(prefix##_matches_oracle_on_clustered),                            \
        cmocka_unit_test(prefix##_matches_oracle_on_duplicates),                           \
        cmocka_unit_test(prefix##_matches_oracle_on_lattice_on_cell_faces),                \
        cmocka_unit_test(prefix##_matches_oracle_on_half_lattice),                         \
        cmocka_unit_test(prefix##_matches_oracle_on_decimal_lattice),                      \
        cmocka_unit_test(prefix##_matches_oracle_on_negative_coordinates),                 \
        cmocka_unit_test(prefix##_matches_oracle_on_mixed_sign),                           \
        cmocka_unit_test(prefix##_matches_oracle_on_huge_offset),                          \
        cmocka_unit_test(prefix##_matches_oracle_on_empty),                                \
        cmocka_unit_test(prefix##_matches_oracle_on_single_point),                         \
        cmocka_unit_test(prefix##_matches_oracle_on_all_equal),                            \
        cmocka_unit_test(prefix##_matches_oracle_on_tiny_radius),                          \
        cmocka_unit_test(prefix##_matches_oracle_on_huge_radius),                          \
        cmocka_unit_test(prefix##_matches_oracle_on_far_outlier),                          \
        cmocka_unit_test(prefix##_matches_oracle_on_narrow_period),                         \
        cmocka_unit_test(prefix##_matches_oracle_on_seam)

#endif
