/* leveled.h: every external symbol the engine defines, renamed to its
 * level's copy (simd/simd.h, PROX_LEVELED). Included by simd.h in engine
 * translation units only.
 *
 * Invariant: a symbol defined in an engine file and missing here is
 * defined once per level under one name, and the link fails (a duplicate
 * definition); a name listed here that code outside the engine calls needs
 * a forwarder in simd/dispatch.c, or the link fails (undefined). */
#ifndef PROX_LEVELED_H
#define PROX_LEVELED_H

/* the level's table of entry points (simd/engine.c) */
#define prox_engine_table PROX_LEVELED(prox_engine_table)

/* points/grid.c */
#define prox_grid_build PROX_LEVELED(prox_grid_build)
#define prox_grid_bytes PROX_LEVELED(prox_grid_bytes)
#define prox_grid_create PROX_LEVELED(prox_grid_create)
#define prox_grid_destroy PROX_LEVELED(prox_grid_destroy)
#define prox_grid_fixed_of PROX_LEVELED(prox_grid_fixed_of)
#define prox_grid_free_kept PROX_LEVELED(prox_grid_free_kept)
#define prox_grid_kept_bytes PROX_LEVELED(prox_grid_kept_bytes)
#define prox_grid_method PROX_LEVELED(prox_grid_method)
#define prox_grid_plan_pairs PROX_LEVELED(prox_grid_plan_pairs)
#define prox_grid_plan_query PROX_LEVELED(prox_grid_plan_query)
#define prox_grid_rows_plan PROX_LEVELED(prox_grid_rows_plan)
#define prox_grid_recheck_init PROX_LEVELED(prox_grid_recheck_init)
#define prox_grid_rel16_metric PROX_LEVELED(prox_grid_rel16_metric)
#define prox_grid_set_density_limits PROX_LEVELED(prox_grid_set_density_limits)
#define prox_grid_trim PROX_LEVELED(prox_grid_trim)
#define prox_grid_update PROX_LEVELED(prox_grid_update)

/* points/grid_search.c */
#define prox_grid_pairs PROX_LEVELED(prox_grid_pairs)
#define prox_grid_pairs_split PROX_LEVELED(prox_grid_pairs_split)
#define prox_grid_query PROX_LEVELED(prox_grid_query)

/* points/grid_strips.c */
#define prox_fixed_gather_ranges PROX_LEVELED(prox_fixed_gather_ranges)
#define prox_grid_half_ranges PROX_LEVELED(prox_grid_half_ranges)
#define prox_grid_point_split PROX_LEVELED(prox_grid_point_split)
#define prox_grid_strip_pairs PROX_LEVELED(prox_grid_strip_pairs)
#define prox_grid_strip_ranges PROX_LEVELED(prox_grid_strip_ranges)
#define prox_grid_strip_ranges_around PROX_LEVELED(prox_grid_strip_ranges_around)
#define prox_grid_strip_rows PROX_LEVELED(prox_grid_strip_rows)
#define prox_rel16_gather_ranges PROX_LEVELED(prox_rel16_gather_ranges)

/* points/grid_fill.c */
#define prox_grid_fill_rows PROX_LEVELED(prox_grid_fill_rows)
#define prox_grid_set_fill_limits PROX_LEVELED(prox_grid_set_fill_limits)

/* points/grid_sweep.c */
#define prox_grid_sweep_pairs PROX_LEVELED(prox_grid_sweep_pairs)
#define prox_grid_sweeps PROX_LEVELED(prox_grid_sweeps)
#define prox_grid_coords_for_held_points PROX_LEVELED(prox_grid_coords_for_held_points)

/* points/cell_screen.c */
#define prox_cell_screen PROX_LEVELED(prox_cell_screen)
#define prox_cell_image_hits PROX_LEVELED(prox_cell_image_hits)

/* points/knn_search.c */
#define prox_knn_search PROX_LEVELED(prox_knn_search)

/* core/radix_sort.c */
#define prox_radix_sort64 PROX_LEVELED(prox_radix_sort64)
#define prox_radix_sort64_either PROX_LEVELED(prox_radix_sort64_either)
#define prox_radix_sort_pairs PROX_LEVELED(prox_radix_sort_pairs)
#define prox_sort_u32_long PROX_LEVELED(prox_sort_u32_long)
#define prox_sort_u32_rows PROX_LEVELED(prox_sort_u32_rows)

/* broad/broad.c */
#define prox_boxes_similar_sizes PROX_LEVELED(prox_boxes_similar_sizes)
#define prox_broad_build PROX_LEVELED(prox_broad_build)
#define prox_broad_create PROX_LEVELED(prox_broad_create)
#define prox_broad_destroy PROX_LEVELED(prox_broad_destroy)
#define prox_broad_impl PROX_LEVELED(prox_broad_impl)
#define prox_broad_pairs PROX_LEVELED(prox_broad_pairs)
#define prox_broad_query_boxes PROX_LEVELED(prox_broad_query_boxes)
#define prox_broad_query_segments PROX_LEVELED(prox_broad_query_segments)
#define prox_broad_query_swept PROX_LEVELED(prox_broad_query_swept)
#define prox_broad_trim PROX_LEVELED(prox_broad_trim)
#define prox_broad_update PROX_LEVELED(prox_broad_update)
#define prox_median_longest_edge PROX_LEVELED(prox_median_longest_edge)
#define prox_scratch_reserve PROX_LEVELED(prox_scratch_reserve)
#define prox_scratch_reserve_run PROX_LEVELED(prox_scratch_reserve_run)

/* broad/box_rows.c */
#define prox_box_rows_build PROX_LEVELED(prox_box_rows_build)
#define prox_box_rows_bytes PROX_LEVELED(prox_box_rows_bytes)
#define prox_box_rows_free PROX_LEVELED(prox_box_rows_free)
#define prox_box_rows_pairs PROX_LEVELED(prox_box_rows_pairs)

/* broad/box_store.c */
#define prox_store_bytes PROX_LEVELED(prox_store_bytes)
#define prox_store_fill PROX_LEVELED(prox_store_fill)
#define prox_store_free PROX_LEVELED(prox_store_free)
#define prox_store_sort_runs PROX_LEVELED(prox_store_sort_runs)

/* broad/broad_brute.c */
#define prox_broad_brute_ops PROX_LEVELED(prox_broad_brute_ops)

/* broad/broad_grid.c */
#define prox_broad_grid_ops PROX_LEVELED(prox_broad_grid_ops)

/* broad/hierarchical_hash.c */
#define prox_broad_hierarchical_ops PROX_LEVELED(prox_broad_hierarchical_ops)

/* broad/multilevel_hash.c */
#define prox_broad_multilevel_ops PROX_LEVELED(prox_broad_multilevel_ops)
#define prox_fit_classes PROX_LEVELED(prox_fit_classes)
#define prox_levels_build PROX_LEVELED(prox_levels_build)
#define prox_levels_bytes PROX_LEVELED(prox_levels_bytes)
#define prox_levels_cells PROX_LEVELED(prox_levels_cells)
#define prox_levels_destroy PROX_LEVELED(prox_levels_destroy)
#define prox_levels_gather PROX_LEVELED(prox_levels_gather)

/* broad/linear_kdtree.c */
#define prox_broad_kdtree_info PROX_LEVELED(prox_broad_kdtree_info)
#define prox_broad_kdtree_ops PROX_LEVELED(prox_broad_kdtree_ops)
#define prox_kd_count_sweep_pairs PROX_LEVELED(prox_kd_count_sweep_pairs)

/* broad/kd_split.c */
#define prox_kd_pieces_of PROX_LEVELED(prox_kd_pieces_of)
#define prox_kd_records_of PROX_LEVELED(prox_kd_records_of)

/* broad/sweep_and_prune.c */
#define prox_broad_sap_ops PROX_LEVELED(prox_broad_sap_ops)

#endif
