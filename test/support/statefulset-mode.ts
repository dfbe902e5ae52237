// The `integration (statefulset)` jest project: the app suites run again with every LRP a StatefulSet.
process.env['OPI_TEST_WORKLOAD_KIND'] = 'statefulset';
