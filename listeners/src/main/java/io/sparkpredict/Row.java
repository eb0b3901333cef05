package io.sparkpredict;

/**
 * One store row, filled by column name: {@code r.set("host", h)} for
 * {@code values[table.col("host")] = h}. A name the table lacks throws, so a column renamed in
 * {@link Tables} cannot silently land in another one.
 */
final class Row {
    final Tables.Table table;
    final Object[] values;

    Row(Tables.Table table) {
        this.table = table;
        this.values = table.newRow();
    }

    void set(String column, Object value) {
        values[table.col(column)] = value;
    }

    /** Position of the first task metric; the others follow it in {@link Tables#METRICS} order. */
    int metricsAt() {
        return table.col(Tables.METRICS[0][0].toString());
    }
}
