
BxJ0.E▄O^BЫI⌠Qю╥H═х√лBлP╒иDPsтRwB&B╣фе77й⌠Oх0ю\P